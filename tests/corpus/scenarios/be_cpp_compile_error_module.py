# category: backend_compiler_failed
# about: Inductor's C++ codegen emits a kernel that g++ rejects (injected relu codegen bug) in a small MLP
import torch

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"

model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
compiled = torch.compile(model)
with torch.no_grad():
    print(compiled(torch.randn(8, 16)).shape)

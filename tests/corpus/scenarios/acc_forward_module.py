# category: accuracy
# about: compiled MLP output differs from eager (injected relu accuracy bug), checked with assert_close
import torch

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"
torch.manual_seed(0)

model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).eval()
x = torch.randn(32, 16)
with torch.no_grad():
    expected = model(x)
    actual = torch.compile(model)(x)
torch.testing.assert_close(actual, expected, msg=lambda m: "compiled vs eager mismatch\n" + m)

# category: runtime_crash
# device: cuda
# about: TORCHINDUCTOR_NAN_ASSERTS turns a NaN produced by a compiled kernel into an assertion
import torch

torch._inductor.config.nan_asserts = True


def f(x):
    return torch.log(x) * 2


torch.compile(f)(torch.tensor([-1.0, 1.0, 2.0], device="cuda"))
torch.cuda.synchronize()

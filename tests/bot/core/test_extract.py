from bot.core.extract import code_blocks, repro_scripts, reporter_environment, request_from_text

ISSUE = '''\
### 🐛 Describe the bug

Compiling this with fullgraph fails:

```python
import torch

@torch.compile(fullgraph=True)
def f(x):
    if x.sum() > 0:
        return x.cuda() + 1
    return x

f(torch.randn(4))
```

````
Traceback (most recent call last):
  File "repro.py", line 9, in <module>
```not a fence close```
torch._dynamo.exc.Unsupported: Data-dependent branching
````

```python
# just a note, not runnable
x = 
```

### Versions

Collecting environment information...
PyTorch version: 2.5.1+cu124
Is debug build: False
CUDA used to build PyTorch: 12.4
OS: Ubuntu 22.04.4 LTS (x86_64)
Python version: 3.10.12 (main, Nov 20 2023, 15:14:05) [GCC 11.4.0] (64-bit runtime)
Is CUDA available: True
GPU models and configuration:
GPU 0: NVIDIA H100 80GB HBM3
GPU 1: NVIDIA H100 80GB HBM3

Nvidia driver version: 550.54.15

Versions of relevant libraries:
[pip3] torch==2.5.1+cu124
[pip3] triton==3.1.0
'''


def test_code_blocks_respect_fence_length():
    blocks = code_blocks(ISSUE)
    assert [b.language for b in blocks] == ["python", "", "python"]
    assert "```not a fence close```" in blocks[1].text
    assert blocks[0].line == 6


def test_repro_scripts_keep_only_runnable_torch_code_pt2_first():
    scripts = repro_scripts(ISSUE)
    assert len(scripts) == 1
    assert scripts[0].startswith("import torch")


def test_reporter_environment_from_collect_env():
    env = reporter_environment(ISSUE)
    assert env.torch_version == "2.5.1+cu124"
    assert env.cuda_version == "12.4"
    assert env.python_version == "3.10.12"
    assert env.os == "Ubuntu 22.04.4 LTS (x86_64)"
    assert env.gpu_models == ("NVIDIA H100 80GB HBM3",)
    assert env.triton_version == "3.1.0"
    assert env.needs_gpu


def test_cpu_only_text_gives_a_cpu_hint():
    env = reporter_environment("CppCompileError: C++ compile error\n cpp_fused_add_0")
    assert env.device_hints == ("cpu",)
    assert not env.needs_gpu


def test_request_from_text_cleans_log_noise():
    request = request_from_text("2026-11-20T10:11:12Z \x1b[31mboom\x1b[0m", source="ci_job", reference="job/1")
    assert request.text == "boom"
    assert request.repro_scripts == ()


def test_collect_env_without_a_gpu():
    env = reporter_environment("PyTorch version: 2.13.0+cpu\nCUDA used to build PyTorch: None\n"
                               "GPU models and configuration: No CUDA\nNvidia driver version: No CUDA\n")
    assert (env.torch_version, env.cuda_version, env.gpu_models, env.needs_gpu) == ("2.13.0+cpu", None, (), False)

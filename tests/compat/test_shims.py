"""Device, precision and distributed shims that scripts written for a GPU call on a CPU
machine, and the one-line "dyngraph does not implement X" for whatever is still missing."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import dyngraph as dg
import dyngraph.nn as nn


def test_device_queries_answer_as_a_cpu_only_pytorch():
    assert dg.cuda.is_available() is False and dg.cuda.device_count() == 0
    assert dg.cuda.is_bf16_supported() is False
    dg.cuda.manual_seed_all(0)
    dg.cuda.empty_cache()
    assert dg.accelerator.is_available() is False
    assert dg.accelerator.current_accelerator() is None
    assert dg.backends.mps.is_available() is False and dg.backends.mps.is_built() is False
    assert dg.distributed.is_available() is False
    assert dg.distributed.is_initialized() is False
    with pytest.raises(RuntimeError, match="dyngraph runs on the CPU only"):
        dg.cuda.current_device()


def test_flags_scripts_set_are_accepted():
    import dyngraph.backends.cudnn as cudnn

    cudnn.benchmark = True
    cudnn.deterministic = True
    dg.backends.cuda.matmul.allow_tf32 = True
    dg.set_float32_matmul_precision("high")
    assert dg.get_float32_matmul_precision() == "high"
    dg.set_float32_matmul_precision("highest")
    with pytest.raises(RuntimeError, match="Invalid precision"):
        dg.set_float32_matmul_precision("fast")


def test_bfloat16_exists_and_fails_on_one_line_when_used():
    assert dg.bfloat16 != dg.float32 and repr(dg.bfloat16) == "dyngraph.bfloat16"
    with pytest.raises(TypeError, match="dyngraph does not implement bfloat16 tensors"):
        dg.ones(2, dtype=dg.bfloat16)
    with pytest.raises(TypeError, match="dyngraph does not implement bfloat16"):
        dg.ones(2).to(dg.bfloat16)
    with pytest.raises(TypeError, match="dyngraph does not implement bfloat16"):
        nn.Linear(2, 2).bfloat16()


def _train(steps, use_amp, scaler_cls):
    dg.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = dg.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaler = scaler_cls() if scaler_cls is not None else None
    x = dg.from_numpy(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        with dg.autocast(device_type="cuda", dtype=dg.float16, enabled=use_amp):
            loss = (model(x) ** 2).mean()
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            scaler.step(opt)
            scaler.update()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("scaler", ["torch.amp", "torch.cuda.amp"])
def test_a_grad_scaler_loop_trains_exactly_as_a_plain_loop(scaler):
    cls = dg.amp.GradScaler if scaler == "torch.amp" else dg.cuda.amp.GradScaler
    assert _train(4, True, cls) == _train(4, False, None)


def test_grad_scaler_is_the_disabled_scaler_of_pytorch():
    torch = pytest.importorskip("torch")
    for lib in (dg, torch):
        scaler = lib.amp.GradScaler("cuda", enabled=False)
        loss = lib.tensor(3.0)
        assert scaler.scale(loss) is loss
        assert scaler.get_scale() == 1.0 and scaler.is_enabled() is False
        assert scaler.state_dict() == {}
    with pytest.warns(FutureWarning, match="torch.cuda.amp.GradScaler"):
        dg.cuda.amp.GradScaler(enabled=False)


def test_autocast_is_a_no_op_context_and_decorator():
    @dg.autocast("cpu")
    def double(x):
        return x * 2

    with dg.amp.autocast(device_type="cpu", dtype=dg.bfloat16):
        y = dg.ones(2) @ dg.ones(2)
    assert y.dtype == dg.float32 and double(dg.ones(1)).tolist() == [2.0]


def test_compile_returns_the_model_itself():
    model = nn.Linear(2, 2)
    assert dg.compile(model) is model
    assert dg.compile()(len) is len


def test_missing_submodules_raise_module_not_found_naming_the_torch_module():
    with pytest.raises(ModuleNotFoundError, match=r"dyngraph does not implement torch\.jit"):
        import dyngraph.jit  # noqa: F401
    with pytest.raises(ModuleNotFoundError, match="torch.nn.quantized"):
        import dyngraph.nn.quantized  # noqa: F401
    # "from package import missing" is Python's own one-line ImportError, naming it.
    with pytest.raises(ImportError, match="cannot import name 'nccl' from 'dyngraph.cuda'"):
        from dyngraph.cuda import nccl  # noqa: F401


def test_missing_names_in_every_namespace_say_what_is_missing():
    cases = [(dg, "fft", "torch.fft"), (dg.cuda.amp, "custom_fwd", "torch.cuda.amp.custom_fwd"),
             (dg.distributed, "all_gather", "torch.distributed.all_gather"),
             (nn, "DataParallel", "torch.nn.DataParallel"),
             (dg.optim, "SparseAdam", "torch.optim.SparseAdam"),
             (nn.functional, "grid_sample", "torch.nn.functional.grid_sample"),
             (dg.backends.cudnn, "flags", "torch.backends.cudnn.flags")]
    for namespace, name, torch_name in cases:
        with pytest.raises(AttributeError, match=f"dyngraph does not implement {torch_name}"):
            getattr(namespace, name)


def test_a_missing_module_method_is_named_but_a_typo_gets_pytorchs_message():
    model = nn.Linear(2, 2)
    with pytest.raises(AttributeError,
                       match="dyngraph does not implement nn.Module.register_full_backward_hook"):
        model.register_full_backward_hook(lambda *a: None)
    with pytest.raises(AttributeError) as info:
        model.wieght  # noqa: B018
    assert str(info.value) == "'Linear' object has no attribute 'wieght'"
    with pytest.raises(NotImplementedError, match="CPU only"):
        model.cuda()
    assert model.share_memory() is model


def test_an_unsupported_torch_module_import_is_one_line_in_a_script(tmp_path):
    script = tmp_path / "uses_jit.py"
    script.write_text("import dyngraph as torch\nimport dyngraph.jit\n")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        "ModuleNotFoundError: No module named 'dyngraph.jit': dyngraph does not implement "
        "torch.jit (the supported surface is listed in docs/api.md)")


@pytest.mark.parametrize("make,message", [
    (lambda: nn.Linear(2, 3, foo=1), "nn.Linear(foo=...)"),
    (lambda: nn.Transformer(d_model=8, nhead=2, layer_drop=0.1), "nn.Transformer(layer_drop"),
    (lambda: dg.optim.RMSprop([nn.Parameter(dg.ones(1))], nesterov=True),
     "optim.RMSprop(nesterov=...)"),
    (lambda: dg.utils.data.DataLoader(range(3), prefetch=2), "utils.data.DataLoader(prefetch"),
    (lambda: dg.distributions.Normal(0.0, 1.0, foo=2), "distributions.Normal(foo=...)"),
])
def test_an_unsupported_constructor_keyword_names_itself(make, message):
    with pytest.raises(TypeError, match="dyngraph does not implement " + re.escape(message)):
        make()


def test_keyword_naming_leaves_other_type_errors_alone():
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        nn.Linear(2)

    class Mine(nn.Module):
        def __init__(self, width):
            super().__init__()

    with pytest.raises(TypeError, match="unexpected keyword argument 'depth'"):
        Mine(depth=3)  # the user's own class keeps Python's message


def test_pytorch_performance_switches_are_accepted():
    w = nn.Parameter(dg.ones(2))
    for make in (lambda: dg.optim.SGD([w], lr=0.1, foreach=False, fused=None),
                 lambda: dg.optim.Adam([w], foreach=True, capturable=False),
                 lambda: dg.optim.AdamW([w], fused=False)):
        make().step()

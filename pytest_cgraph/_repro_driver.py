# ---- pytest-cgraph repro driver (imports torch only) ----
# Runs ``program`` eagerly and compiled for ITERS iterations the way
# pytest-cgraph does: identical inputs and RNG seed per iteration on both
# sides, outputs / arguments / grads / aliasing compared after every call,
# outputs kept from every iteration re-read at the end. This text is copied
# into every repro file, so a repro needs nothing but torch.

import faulthandler
import logging
import sys
import traceback

import torch
import torch.utils._pytree as _pytree

_MODES = ("reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_OVERWRITTEN = "overwritten by a subsequent run"


def _compile(fn, backend):
    if ":" in backend:  # package.module:attr
        module, _, attr = backend.partition(":")
        backend = getattr(__import__(module, fromlist=[attr]), attr)
    elif backend in _MODES:
        return torch.compile(fn, mode=backend)
    return torch.compile(fn, backend=backend)


def _key(t):
    if not isinstance(t, torch.Tensor) or t.layout != torch.strided:
        return None
    storage = t.untyped_storage()
    return (t.device, storage.data_ptr()) if storage.nbytes() else None


def _aliasing(outs, args):
    described = []
    for i, out in enumerate(outs):
        if not isinstance(out, torch.Tensor):
            described.append("")
            continue
        parts = []
        for j, arg in enumerate(args):
            if arg is out:
                parts.append(f"is argument {j}")
            elif _key(out) is not None and _key(arg) == _key(out):
                parts.append(f"shares storage with argument {j}")
        for j in range(i):
            if outs[j] is out:
                parts.append(f"is output {j}")
            elif _key(out) is not None and _key(outs[j]) == _key(out):
                parts.append(f"shares storage with output {j}")
        described.append("; ".join(parts))
    return described


def _snap(value, layout=False):
    if not isinstance(value, torch.Tensor):
        return ("value", value)
    meta = (value.dtype, tuple(value.shape), value.device, value.requires_grad)
    if layout:
        meta += (tuple(value.stride()), value.storage_offset())
    return ("tensor", meta, value.detach().clone())


def _differs(expected, actual, rtol, atol):
    if expected[0] != actual[0]:
        return f"{expected[0]} != {actual[0]}"
    if expected[0] == "value":
        return None if expected[1] == actual[1] else f"{expected[1]!r} != {actual[1]!r}"
    if expected[1] != actual[1]:
        return f"metadata {expected[1]} != {actual[1]}"
    try:
        torch.testing.assert_close(
            actual[2], expected[2], rtol=rtol, atol=atol, equal_nan=True, check_stride=False
        )
    except AssertionError as error:
        return str(error).strip().splitlines()[0]
    return None


def _side(fn, args, seed):
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.compiler.cudagraph_mark_step_begin()
    try:
        result = fn(*args)
        flat_args = _pytree.tree_leaves(tuple(args))
        outs = _pytree.tree_leaves(result)
        seen = {
            "structure": str(_pytree.tree_flatten(result)[1]),
            "outputs": [_snap(o) for o in outs],
            "aliasing": _aliasing(outs, flat_args),
        }
        roots = [
            o
            for o in outs
            if isinstance(o, torch.Tensor) and o.requires_grad and o.dtype.is_floating_point
        ]
        if roots:
            torch.autograd.backward(torch.stack([o.sum().double() for o in roots]).sum())
        seen["arguments"] = [_snap(a, layout=True) for a in flat_args]
        seen["grads"] = [
            None if a.grad is None else _snap(a.grad)
            for a in flat_args
            if isinstance(a, torch.Tensor) and a.is_leaf and a.requires_grad
        ]
    except Exception as error:
        return {"error": error, "traceback": traceback.format_exc()}, []
    return seen, outs


def reproduce(
    program,
    inputs,
    advance,
    fresh_inputs,
    iters,
    backend,
    compiled_autograd=False,
    rtol=None,
    atol=None,
):
    """The first difference between eager and compiled, as one line, or None."""
    trace = logging.getLogger("torch.__trace")
    for handler in list(trace.handlers):  # an idle trace handler costs every compile
        if getattr(handler, "root_dir", "") is None and getattr(handler, "stream", "") is None:
            trace.removeHandler(handler)
    torch._dynamo.reset()
    compiled = _compile(program, backend)
    state = {"eager": inputs(1), "compiled": inputs(1)}
    kept = []
    for k in range(1, iters + 1):
        seen, raw = {}, {}
        for side, fn in (("eager", program), ("compiled", compiled)):
            if fresh_inputs:
                state[side] = inputs(k)
            if side == "compiled" and compiled_autograd:
                from torch._dynamo import compiled_autograd as _ca

                with _ca._enable(lambda gm: _compile(gm, backend)):
                    seen[side], raw[side] = _side(fn, state[side], k)
            else:
                seen[side], raw[side] = _side(fn, state[side], k)
        if "error" in seen["eager"]:
            return None  # eager raised: no reference behaviour (an invalid program)
        if "error" in seen["compiled"]:
            error = seen["compiled"]["error"]
            return f"crash at iteration {k}: {type(error).__name__}: {error}".splitlines()[0]
        e, c = seen["eager"], seen["compiled"]
        if e["structure"] != c["structure"]:
            return f"metadata difference at iteration {k}: returned structure"
        for i, (x, y) in enumerate(zip(e["outputs"], c["outputs"], strict=True)):
            found = _differs(x, y, rtol, atol)
            if found:
                return f"difference at iteration {k}, output #{i}: {found}"
        for i, (x, y) in enumerate(zip(e["aliasing"], c["aliasing"], strict=True)):
            if x != y:
                return f"aliasing difference at iteration {k}, output #{i}: {x!r} != {y!r}"
        for i, (x, y) in enumerate(zip(e["arguments"], c["arguments"], strict=True)):
            found = _differs(x, y, rtol, atol)
            if found:
                return f"difference at iteration {k}, argument {i}: {found}"
        for i, (x, y) in enumerate(zip(e["grads"], c["grads"], strict=True)):
            if (x is None) != (y is None) or (x is not None and _differs(x, y, rtol, atol)):
                return f"grad difference at iteration {k}, grad of leaf argument {i}"
        kept.append((raw["eager"], raw["compiled"]))
        if advance is not None and k < iters:
            for side in state:
                state[side] = advance(k, tuple(state[side]), tuple(raw[side]))
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    for k, (eager_outs, compiled_outs) in enumerate(kept, start=1):
        for i, (x, y) in enumerate(zip(eager_outs, compiled_outs, strict=True)):
            if not isinstance(x, torch.Tensor):
                continue
            try:
                now = _snap(y)
            except RuntimeError as error:
                if _OVERWRITTEN in str(error):
                    continue
                return f"crash re-reading output #{i} of iteration {k}: {error}".splitlines()[0]
            found = _differs(_snap(x), now, rtol, atol)
            if found:
                return f"stale output: output #{i} of iteration {k} changed later: {found}"
    return None


def main(default_backend, run):
    """``python FILE [--backend NAME]``: one line, exit 1 while the bug is there."""
    faulthandler.enable()  # a crash of the process shows where it happened
    backend = default_backend
    if "--backend" in sys.argv:
        backend = sys.argv[sys.argv.index("--backend") + 1]
    found = run(backend)
    if found:
        print(f"REPRODUCED ({backend}): {found}")
        sys.exit(1)
    print(f"NOT REPRODUCED ({backend}): eager and compiled agree")
    sys.exit(0)

"""pytorch/pytorch#139257: a custom op declared to mutate a parameter via set_ cannot be compiled.
Area: metadata-mutation. Backend: aot_eager. Symptom: crash.
The op rebinds an empty Parameter onto a (3, 3) tensor with set_; auto-functionalization treats it as
a data mutation of the original 0-element input and fails while expanding the new value into it.
Written from the issue's description."""

import sys

import torch


@torch.library.custom_op("gh139257::set_data", mutates_args=["param"])
def set_data(param: torch.Tensor, new_data: torch.Tensor) -> None:
    param.set_(new_data)


@torch.library.register_fake("gh139257::set_data")
def _(param, new_data):
    param.set_(new_data)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.param = torch.nn.Parameter(torch.empty(0))

    def forward(self, x):
        set_data(self.param, x * 3)
        return self.param / 3


x = torch.arange(9.0).reshape(3, 3)
with torch.no_grad():
    oe = M()(x)
    print("eager   :", oe.flatten().tolist())
    try:
        oc = torch.compile(M(), backend="aot_eager")(x)
    except Exception as e:
        msg = [ln for ln in str(e).splitlines() if ln.strip()]
        print("compiled raised", type(e).__name__, " | ".join(msg[:2]))
        sys.exit(1)
print("compiled:", oc.flatten().tolist())
sys.exit(0 if torch.equal(oe, oc) else 1)

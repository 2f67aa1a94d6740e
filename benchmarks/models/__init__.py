"""Models for the graph backend's tests and benchmarks, written here with random weights
(torchvision's wheel does not load against the CPU torch build on this machine).

Each builder takes size knobs (width, image size, layers) so the tests can run small versions;
``MODELS`` maps a name to ``(builder for the full-size model, input shape for a batch of 1)``.

Example:
    >>> import torch
    >>> from benchmarks.models import build
    >>> model, x = build("mlp", batch=2)
    >>> model(x).shape
    torch.Size([2, 10])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .bert import BertLayer
from .control_flow import GatedNet
from .gpt import GPT
from .mlp import MLP
from .mobilenet import MobileNetV2
from .resnet import resnet18, resnet50
from .unet import UNet

# The small (test) models keep every kind of block the full ones have, once each where the
# full model repeats it: a stage of two blocks (one with a projection shortcut, one with the
# identity shortcut), then one stride-2 block per later stage. Compile time grows with the
# number of convolutions, so this keeps the whole-model tests quick.
SMALL_RESNET_LAYERS = [2, 1, 1, 1]
# MobileNetV2's first three stages: the expand-1 block, stride-2 blocks and a residual block.
SMALL_MOBILENET_SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 2, 2))

# name -> (builder(**size) -> model, input shape without the batch, full-size kwargs, small kwargs)
MODELS: dict[str, tuple[Callable[..., torch.nn.Module], Callable[[dict], tuple], dict, dict]] = {
    "resnet18": (resnet18, lambda k: (3, k.get("image", 224), k.get("image", 224)), {},
                 {"width": 8, "image": 32, "num_classes": 10, "layers": SMALL_RESNET_LAYERS}),
    "resnet50": (resnet50, lambda k: (3, k.get("image", 224), k.get("image", 224)), {},
                 {"width": 8, "image": 32, "num_classes": 10, "layers": SMALL_RESNET_LAYERS}),
    "mobilenet_v2": (MobileNetV2, lambda k: (3, k.get("image", 224), k.get("image", 224)), {},
                     {"width_mult": 0.25, "image": 32, "num_classes": 10,
                      "settings": SMALL_MOBILENET_SETTINGS}),
    "bert_layer": (BertLayer, lambda k: (k.get("seq", 128), k.get("hidden", 768)), {},
                   {"hidden": 64, "heads": 4, "seq": 16}),
    "unet": (UNet, lambda k: (3, k.get("image", 128), k.get("image", 128)), {},
             {"base": 8, "image": 16}),
    "gpt": (GPT, lambda k: (k.get("seq", 128),), {},
            {"vocab": 100, "hidden": 32, "heads": 4, "layers": 1, "seq": 16}),
    "mlp": (MLP, lambda k: (k.get("in_features", 784),), {}, {"in_features": 32, "hidden": 64}),
    "gated": (GatedNet, lambda k: (k.get("features", 256),), {}, {"features": 16}),
}  # fmt: skip
# The models whose input is an image of size "image" (square, 224 by default).
IMAGE_MODELS = frozenset({"resnet18", "resnet50", "mobilenet_v2", "unet"})
# The models whose input is a sequence of "seq" tokens (128 by default).
SEQUENCE_MODELS = frozenset({"bert_layer", "gpt"})
# The models whose input is token ids (int64 below the model's vocabulary), not floats.
TOKEN_MODELS = frozenset({"gpt"})


def build(
    name: str,
    batch: int = 1,
    small: bool = False,
    seed: int = 0,
    image: int | None = None,
    seq: int | None = None,
) -> tuple[Any, Any]:
    """``(model in eval mode, random input of the given batch)`` for model ``name``; ``image``
    sets an image model's input size (224 by default), ``seq`` a sequence model's length (128);
    each is ignored by the other models."""
    builder, shape_of, full, small_kwargs = MODELS[name]
    kwargs = dict(small_kwargs if small else full)
    if image is not None and name in IMAGE_MODELS:
        kwargs["image"] = image
    if seq is not None and name in SEQUENCE_MODELS:
        kwargs["seq"] = seq
    torch.manual_seed(seed)
    size_only = {"image", "seq"}
    model = builder(**{k: v for k, v in kwargs.items() if k not in size_only}).eval()
    _randomize_norms(model)
    if name in TOKEN_MODELS:
        return model, torch.randint(0, model.tokens.num_embeddings, (batch, *shape_of(kwargs)))
    return model, torch.randn(batch, *shape_of(kwargs))


def _randomize_norms(model: torch.nn.Module) -> None:
    """Batch-norm statistics away from (0, 1) so a wrong folding would show."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)


def model_names(text: str) -> list[str]:
    """The models named in a comma-separated list; a name may be any unambiguous prefix of one
    (``bert`` is ``bert_layer``). ValueError for a name that matches none or several."""
    names = []
    for given in text.split(","):
        found = [given] if given in MODELS else [m for m in MODELS if m.startswith(given)]
        if len(found) != 1:
            what = "matches none" if not found else f"matches {', '.join(found)}"
            raise ValueError(f"model {given!r} {what}; the models are {', '.join(MODELS)}")
        names.append(found[0])
    return names


__all__ = ["MODELS", "build", "model_names"]

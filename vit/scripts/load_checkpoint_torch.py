"""Load a patchgrad checkpoint into PyTorch and evaluate it there: proof that checkpoints
open in the Python ecosystem.

    /usr/bin/python3 vit/scripts/load_checkpoint_torch.py runs/cifar-tiny/best.safetensors \
        [--data DIR] [--images N]

The file is read as plain safetensors (8-byte header length, JSON header, little-endian
tensors; no `safetensors` package needed) and loaded with load_state_dict(strict=True) into
the independent timm-named ViT of make_golden.py (patch_embed.proj is a Conv2d there, as in
timm, and the checkpoint stores its weight as [D, C, P, P]). The model config comes from the
file's metadata. It then classifies the first N images of test_batch.bin with the same
normalisation as patchgrad and prints the accuracy, which must match `patchgrad eval` on
the same images to the rounding of float32.
"""

import argparse
import json
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import ViT  # noqa: E402
from train_torch import normalise, read_cifar  # noqa: E402


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, e in header.items():
        if e["dtype"] != "F32":
            sys.exit("%s: tensor %s has dtype %s, expected F32" % (path, name, e["dtype"]))
        begin, end = e["data_offsets"]
        tensors[name] = torch.from_numpy(np.frombuffer(data[begin:end], dtype="<f4").copy()).reshape(e["shape"])
    return tensors, meta


def config_from(meta):
    get = lambda key: meta["config." + key]  # noqa: E731
    truth = lambda key: get(key) in ("true", "1")  # noqa: E731
    return dict(image_height=int(get("image_height")), image_width=int(get("image_width")),
                channels=int(get("channels")), num_classes=int(get("num_classes")),
                layer_norm_eps=float(get("layer_norm_eps")), pool=get("pool"), head=get("head"),
                qkv_bias=truth("qkv_bias"), gelu=get("gelu"), learnable_pos_embed=truth("learnable_pos_embed"),
                patch_size=int(get("patch_size")), dim=int(get("dim")), depth=int(get("depth")),
                heads=int(get("heads")), mlp_dim=int(get("mlp_dim")),
                lsa=meta.get("config.lsa") == "true")  # absent before patchgrad 0.10


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--data", default=os.environ.get("PATCHGRAD_DATA", "data/cifar-10-batches-bin"))
    parser.add_argument("--images", type=int, default=10000)
    args = parser.parse_args()

    tensors, meta = read_safetensors(args.checkpoint)
    model = ViT(config_from(meta))
    model.load_state_dict(tensors, strict=True)
    model.eval()
    print("%s: %d tensors loaded into PyTorch with strict=True" % (args.checkpoint, len(tensors)))

    images, labels = read_cifar(os.path.join(args.data, "test_batch.bin"))
    images, labels = images[:args.images], labels[:args.images]
    x = normalise(images)
    with torch.no_grad():
        predictions = torch.cat([model(batch).argmax(1) for batch in x.split(500)])
    print("accuracy on the first %d test images: %.2f%%" % (len(labels), 100.0 * (predictions == labels).float().mean()))


if __name__ == "__main__":
    main()

"""Writes the PyTorch golden values that tests/vit/test_vit_golden_f32.cpp checks patchgrad's
VisionTransformer against: weights, a batch of images and labels, the logits, the loss and
the gradient of the loss with respect to every parameter.

Run by hand from the repository root with Debian's PyTorch (python3-torch 1.13 is installed
for the system Python, not for a pyenv one on PATH):

    /usr/bin/python3 vit/scripts/make_golden.py

Tests never run this script; they read the files it writes, which are committed.

The model below is an independent ViT in plain PyTorch, written from the paper and timm's
VisionTransformer, not from patchgrad's code: same parameter names and semantics as timm
(cls_token, pos_embed, patch_embed.proj as a Conv2d with kernel = stride = patch,
blocks.N.norm1 / attn.qkv / attn.proj / norm2 / mlp.fc1 / mlp.fc2, norm, [pre_logits.fc],
[attention_pool], head), pre-norm blocks, one fused qkv projection, scores scaled by 1/sqrt(head_dim) before
the softmax, LayerNorm eps 1e-6, no dropout.

Three cases, one file each in tests/data/:

  vit_golden.safetensors           cls pooling, linear head, qkv bias, exact-erf GELU,
                                   learnable pos_embed: timm's ViT exactly.
  vit_golden_mean_mlp.safetensors  mean pooling, pre-training head (pre_logits.fc + tanh,
                                   then head), no qkv bias, tanh GELU, fixed sinusoidal
                                   position table (not a parameter), and a patch mask
                                   hiding some patches from attention.
  vit_golden_seq_lsa.safetensors   sequence pooling (Compact Transformers: softmax of
                                   attention_pool, a Linear D -> 1, over the tokens, then
                                   the weighted mean) and Locality Self-Attention (Lee et
                                   al. 2021: a learned scale per head, blocks.N.attn.scale,
                                   and the diagonal of the scores masked), otherwise the
                                   first case, with a mask.

Where patchgrad's options go beyond timm, this script follows patchgrad's documented
semantics (vit/vision_transformer.h): "mean" pooling averages all N+1 tokens, the class
token included (lucidrains, the ViT study notes; timm's global_pool="avg" leaves it out), and
the final LayerNorm, named "norm", is applied to the pooled vector (timm's fc_norm); a hidden patch
gets -inf scores as a key, for every query; the fixed table is ViT from scratch's
PE(pos, 2i) = sin(pos / 10000^(2i/D)), PE(pos, 2i+1) = cos(same).

File layout (safetensors, all float32 except the I64 ones):
  <param name>            every parameter under its timm name. The one reshape:
                          patch_embed.proj.weight is stored [D, C*P*P] (patchgrad's Linear),
                          not timm's Conv2d [D, C, P, P]; it is the same numbers in the same
                          order, timm's weight is stored.reshape(D, C, P, P).
  grad.<param name>       d loss / d param, same shape as the parameter (same reshape).
  input.images            [B, C, H, W]
  input.labels            [B], I64 class indices (like PyTorch's long targets)
  input.patch_mask        [N], I64, 1 = visible, 0 = hidden (mask case only)
  output.logits           [B, num_classes]
  output.loss             [] mean cross-entropy over the batch
  __metadata__            the config, under ViTConfig's field names (image_height, ...,
                          gelu = "none" | "tanh", qkv_bias / learnable_pos_embed = "true" |
                          "false"), plus batch, seed, torch version and compute dtype.

Weights are float32 numbers (torch.randn * 0.2 — larger than timm's 0.02 init so that every
parameter visibly moves the output; LayerNorm weights 1 + 0.2 randn). The forward and
backward run in float64 on those exact float32 values and are rounded to float32 only when
stored, so the golden values carry no float32 rounding of PyTorch's own; the script prints how
far PyTorch's own float32 run is from them, for comparison with patchgrad's float32 errors.
"""

import json
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

BASE = dict(image_height=8, image_width=12, channels=3, patch_size=4, dim=16, depth=2, heads=2,
            mlp_dim=32, num_classes=5, layer_norm_eps=1e-6)
CASES = [
    ("vit_golden.safetensors", 1234,
     dict(BASE, pool="cls", head="linear", qkv_bias=True, gelu="none", learnable_pos_embed=True),
     None),
    ("vit_golden_mean_mlp.safetensors", 5678,
     dict(BASE, pool="mean", head="mlp", qkv_bias=False, gelu="tanh", learnable_pos_embed=False),
     [1, 0, 1, 1, 0, 1]),
    ("vit_golden_seq_lsa.safetensors", 9012,
     dict(BASE, pool="seq", head="linear", qkv_bias=True, gelu="none", learnable_pos_embed=True, lsa=True),
     [1, 1, 0, 1, 1, 1]),
]
BATCH = 3


def sinusoidal_table(positions, dim):
    pe = torch.zeros(1, positions, dim, dtype=torch.float64)
    for pos in range(positions):
        for i2 in range(0, dim, 2):
            angle = pos / 10000 ** (i2 / dim)
            pe[0, pos, i2] = math.sin(angle)
            if i2 + 1 < dim:
                pe[0, pos, i2 + 1] = math.cos(angle)
    return pe


class Attention(nn.Module):
    def __init__(self, dim, heads, qkv_bias, lsa=False):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        # LSA (Lee et al. 2021): the scale is a learned parameter per head, and the diagonal
        # of the scores is masked. Registered first, as patchgrad lists a module's own
        # parameters before its children's.
        self.scale = nn.Parameter(torch.full((heads,), self.head_dim ** -0.5)) if lsa else self.head_dim ** -0.5
        self.lsa = lsa
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, key_visible):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        if self.lsa:
            attn = (q @ k.transpose(-2, -1)) * self.scale.view(1, -1, 1, 1)
            attn = attn.masked_fill(torch.eye(N, dtype=torch.bool), float("-inf"))
        else:
            attn = (q @ k.transpose(-2, -1)) * self.scale
        if key_visible is not None:
            attn = attn.masked_fill(~key_visible, float("-inf"))
        attn = attn.softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))


class Mlp(nn.Module):
    def __init__(self, dim, hidden, gelu):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU(approximate=gelu)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def drop_path(x, p, training):
    """timm's drop_path (stochastic depth): in training, each sample's branch is zeroed with
    probability p and the others are scaled by 1/(1-p); identity otherwise."""
    if p == 0 or not training:
        return x
    keep = x.new_empty((x.shape[0],) + (1,) * (x.dim() - 1)).bernoulli_(1 - p)
    return x * keep / (1 - p)


class Block(nn.Module):
    def __init__(self, c, drop_path_rate=0.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(c["dim"], eps=c["layer_norm_eps"])
        self.attn = Attention(c["dim"], c["heads"], c["qkv_bias"], c.get("lsa", False))
        self.norm2 = nn.LayerNorm(c["dim"], eps=c["layer_norm_eps"])
        self.mlp = Mlp(c["dim"], c["mlp_dim"], c["gelu"])
        self.drop_path_rate = drop_path_rate

    def forward(self, x, key_visible):
        x = x + drop_path(self.attn(self.norm1(x), key_visible), self.drop_path_rate, self.training)
        return x + drop_path(self.mlp(self.norm2(x)), self.drop_path_rate, self.training)


class PatchEmbed(nn.Module):
    def __init__(self, c):
        super().__init__()
        p = c["patch_size"]
        self.proj = nn.Conv2d(c["channels"], c["dim"], kernel_size=p, stride=p)

    def forward(self, images):
        return self.proj(images).flatten(2).transpose(1, 2)  # [B, N, D], patches row-major


class PreLogits(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.act = nn.Tanh()

    def forward(self, x):
        return self.act(self.fc(x))


def patch_dropout(x, p):
    """layers/patch_dropout.h (timm's PatchDropout): each image keeps the class token and a random
    max(1, floor((1 - p) N)) of its N patch tokens, in their order; drawn from torch's generator."""
    B, T, D = x.shape
    keep = max(1, math.floor((1 - p) * (T - 1)))
    kept = torch.argsort(torch.rand(B, T - 1), dim=1)[:, :keep].sort(dim=1).values + 1
    return torch.cat([x[:, :1], torch.gather(x, 1, kept.unsqueeze(-1).expand(-1, -1, D))], dim=1)


class ViT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.pool = c["pool"]
        self.patch_dropout = c.get("patch_dropout", 0.0)
        n = (c["image_height"] // c["patch_size"]) * (c["image_width"] // c["patch_size"])
        self.cls_token = nn.Parameter(torch.zeros(1, 1, c["dim"]))
        if c["learnable_pos_embed"]:
            self.pos_embed = nn.Parameter(torch.zeros(1, n + 1, c["dim"]))
        else:
            self.register_buffer("pos_embed", sinusoidal_table(n + 1, c["dim"]), persistent=False)
        self.patch_embed = PatchEmbed(c)
        # Stochastic depth grows linearly from 0 at the first block to drop_path at the last (timm's
        # dpr), as in vit/vision_transformer.cpp.
        p, depth = c.get("drop_path", 0.0), c["depth"]
        rates = [p * l / (depth - 1) if depth > 1 else p for l in range(depth)]
        self.blocks = nn.ModuleList([Block(c, rate) for rate in rates])
        # Sequence pooling's token scores (Compact Transformers' attention_pool), before norm as
        # in vit/vision_transformer.cpp.
        self.attention_pool = nn.Linear(c["dim"], 1) if self.pool == "seq" else None
        self.norm = nn.LayerNorm(c["dim"], eps=c["layer_norm_eps"])
        self.pre_logits = PreLogits(c["dim"]) if c["head"] == "mlp" else None
        self.head = nn.Linear(c["dim"], c["num_classes"])

    def forward(self, images, patch_mask=None):
        x = self.patch_embed(images)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = x + self.pos_embed.to(x.dtype)
        if self.training and self.patch_dropout > 0:
            x = patch_dropout(x, self.patch_dropout)
        key_visible = None
        if patch_mask is not None:
            key_visible = torch.cat([torch.ones(1, dtype=torch.bool), patch_mask.bool()])
        for block in self.blocks:
            x = block(x, key_visible)
        if self.pool == "seq":
            x = (F.softmax(self.attention_pool(x), dim=1).transpose(1, 2) @ x).squeeze(1)
        else:
            x = x.mean(dim=1) if self.pool == "mean" else x[:, 0]
        x = self.norm(x)
        if self.pre_logits is not None:
            x = self.pre_logits(x)
        return self.head(x)


def patchgrad_layout(name, t):
    """patchgrad's layout: the patch projection is a Linear [D, C*P*P], not a conv."""
    if name == "patch_embed.proj.weight":
        t = t.reshape(t.shape[0], -1)
    return t


def save_safetensors(path, tensors, metadata):
    """The safetensors format by hand (the pip package is not installed for Debian's Python)."""
    header = {"__metadata__": metadata}
    blobs = []
    offset = 0
    for name, t in tensors:
        t = t.detach().contiguous()
        if t.dtype == torch.int64:
            dtype, blob = "I64", t.numpy().astype("<i8").tobytes()
        else:
            dtype, blob = "F32", t.to(torch.float32).numpy().astype("<f4").tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
    os.replace(tmp, path)


def rel_err(a, b):
    """max |a - b| / max |b|: the error relative to the tensor's scale."""
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def run(model, images, labels, patch_mask):
    model.zero_grad()
    logits = model(images, patch_mask)
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters()}
    return logits.detach(), loss.detach(), grads


def make_case(path, seed, c, mask):
    g = torch.Generator().manual_seed(seed)
    model = ViT(c)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g) * 0.2
            p.copy_(1 + noise if name.endswith("norm1.weight") or name.endswith("norm2.weight")
                    or name == "norm.weight" else noise)
    images = torch.randn(BATCH, c["channels"], c["image_height"], c["image_width"], generator=g)
    labels = torch.randint(0, c["num_classes"], (BATCH,), generator=g)
    patch_mask = None if mask is None else torch.tensor(mask, dtype=torch.int64)

    logits32, loss32, grads32 = run(model, images, labels, patch_mask)
    model.double()
    logits, loss, grads = run(model, images.double(), labels, patch_mask)

    print(path)
    print("  loss %.6f, logits in [%.3f, %.3f]" % (loss.item(), logits.min().item(), logits.max().item()))
    print("  PyTorch's own float32 run vs the float64 golden values (max |diff| / max |golden|):")
    # A gradient that is zero in exact arithmetic (attention_pool.bias: the softmax ignores a
    # constant added to every score) has no relative error; it is listed instead.
    zero = [n for n in grads if grads[n].abs().max() < 1e-12]
    print("    logits %.2e  loss %.2e  gradients (worst) %.2e%s" % (
        rel_err(logits32.double(), logits), rel_err(loss32.double(), loss),
        max(rel_err(grads32[n].double(), grads[n]) for n in grads if n not in zero),
        "; zero in exact arithmetic: " + ", ".join(zero) if zero else ""))

    tensors = [(name, patchgrad_layout(name, p)) for name, p in model.named_parameters()]
    tensors += [("grad." + name, patchgrad_layout(name, grads[name])) for name, _ in model.named_parameters()]
    tensors += [("input.images", images), ("input.labels", labels)]
    if patch_mask is not None:
        tensors.append(("input.patch_mask", patch_mask))
    tensors += [("output.logits", logits), ("output.loss", loss)]

    metadata = {k: (("true" if v else "false") if isinstance(v, bool) else str(v)) for k, v in c.items()}
    metadata.update(batch=str(BATCH), seed=str(seed), torch_version=torch.__version__,
                    compute_dtype="float64, stored as float32",
                    generator="vit/scripts/make_golden.py",
                    patch_embed_layout="patch_embed.proj.weight is [D, C*P*P]; timm's Conv2d weight is "
                                       "this reshaped to [D, C, P, P]")
    save_safetensors(path, tensors, metadata)
    print("  wrote %d tensors, %d bytes" % (len(tensors), os.path.getsize(path)))


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for name, seed, config, mask in CASES:
        make_case(os.path.join(root, "tests", "data", name), seed, config, mask)


if __name__ == "__main__":
    main()

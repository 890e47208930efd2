"""Models of our own for benchmarks/memory_accuracy.py: one of each common family.

Each ``build_*`` returns a fresh module; ``MODELS`` names them with one sample's shape,
whether the input is token ids, and the two batch sizes the benchmark runs.
"""

from __future__ import annotations

import torch
from torch import nn


def _conv(cin: int, cout: int, stride: int = 1) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()
    )


def build_vgg() -> nn.Module:
    """A VGG-style CNN for 64x64 images: conv-bn-relu pairs and max pooling."""
    layers: list[nn.Module] = []
    cin = 3
    for c in (32, 64, 128, 128):
        layers += [_conv(cin, c), _conv(c, c), nn.MaxPool2d(2)]
        cin = c
    return nn.Sequential(
        *layers,
        nn.Flatten(),
        nn.Linear(128 * 4 * 4, 256),
        nn.ReLU(),
        nn.Dropout(0.5),
        nn.Linear(256, 10),
    )


class _Res(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.a, self.b = (
            _conv(cin, cout, stride),
            nn.Sequential(nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)),
        )
        self.skip = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.b(self.a(x)) + self.skip(x))


def build_resnet() -> nn.Module:
    """A small ResNet (basic blocks, 2 per stage) for 96x96 images."""
    blocks: list[nn.Module] = [_conv(3, 32, 2)]
    cin = 32
    for c, s in ((32, 1), (64, 2), (128, 2), (256, 2)):
        blocks += [_Res(cin, c, s), _Res(c, c, 1)]
        cin = c
    return nn.Sequential(*blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 100))


def build_mobilenet() -> nn.Module:
    """Depthwise-separable convolutions (MobileNet v1 style) for 128x128 images."""

    def dw(cin: int, cout: int, stride: int) -> nn.Module:
        return nn.Sequential(
            nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False),
            nn.BatchNorm2d(cin),
            nn.ReLU6(),
            nn.Conv2d(cin, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU6(),
        )

    return nn.Sequential(
        _conv(3, 32, 2),
        dw(32, 64, 1),
        dw(64, 128, 2),
        dw(128, 128, 1),
        dw(128, 256, 2),
        dw(256, 256, 1),
        dw(256, 512, 2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(512, 1000),
    )


class _LSTM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(20_000, 256)
        self.rnn = nn.LSTM(256, 512, num_layers=2, batch_first=True, dropout=0.1)
        self.head = nn.Linear(512, 5)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(self.embed(tokens))
        return self.head(out[:, -1])


def build_lstm() -> nn.Module:
    """A two-layer LSTM text classifier over token ids."""
    return _LSTM()


class _GRUSeq2Seq(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(8000, 128)
        self.enc = nn.GRU(128, 256, batch_first=True)
        self.dec = nn.GRU(128, 256, batch_first=True)
        self.out = nn.Linear(256, 8000)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        e = self.embed(tokens)
        _, h = self.enc(e)
        y, _ = self.dec(e, h)
        return self.out(y)


def build_gru_seq2seq() -> nn.Module:
    """A GRU encoder-decoder with a vocabulary-sized output (teacher forcing)."""
    return _GRUSeq2Seq()


class _Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10_000, 256)
        layer = nn.TransformerEncoderLayer(
            256, 8, 1024, dropout=0.1, batch_first=True, norm_first=True
        )
        self.enc = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
        self.head = nn.Linear(256, 3)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.enc(self.embed(tokens)).mean(1))


def build_encoder() -> nn.Module:
    """A pre-norm transformer encoder classifier (nn.TransformerEncoder)."""
    return _Encoder()


class _EncDec(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(6000, 192)
        self.t = nn.Transformer(192, 6, 2, 2, 768, dropout=0.1, batch_first=True)
        self.out = nn.Linear(192, 6000)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        e = self.embed(tokens)
        return self.out(self.t(e, e))


def build_encdec() -> nn.Module:
    """An encoder-decoder transformer (nn.Transformer) with a vocabulary head."""
    return _EncDec()


class _Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        att = (q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2)) / (d // self.heads) ** 0.5
        mask = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        y = (att @ v.transpose(1, 2)).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        return x + self.mlp(self.n2(x))


class _GPT(nn.Module):
    def __init__(self, vocab: int = 8192, d: int = 256, layers: int = 4, seq: int = 256) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.Sequential(*(_Block(d, 8) for _ in range(layers)))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        return self.head(self.norm(self.blocks(self.tok(tokens) + self.pos(pos))))


def build_gpt() -> nn.Module:
    """A GPT-style decoder written out (causal attention by hand, tied embeddings)."""
    return _GPT()


class _UNet(nn.Module):
    def __init__(self, c: int = 16) -> None:
        super().__init__()
        self.d1, self.d2, self.d3 = (
            nn.Sequential(_conv(3, c), _conv(c, c)),
            nn.Sequential(_conv(c, 2 * c), _conv(2 * c, 2 * c)),
            nn.Sequential(_conv(2 * c, 4 * c), _conv(4 * c, 4 * c)),
        )
        self.pool = nn.MaxPool2d(2)
        self.up2, self.u2 = (
            nn.ConvTranspose2d(4 * c, 2 * c, 2, 2),
            nn.Sequential(_conv(4 * c, 2 * c), _conv(2 * c, 2 * c)),
        )
        self.up1, self.u1 = (
            nn.ConvTranspose2d(2 * c, c, 2, 2),
            nn.Sequential(_conv(2 * c, c), _conv(c, c)),
        )
        self.out = nn.Conv2d(c, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.d1(x)
        b = self.d2(self.pool(a))
        m = self.d3(self.pool(b))
        y = self.u2(torch.cat((self.up2(m), b), 1))
        return self.out(self.u1(torch.cat((self.up1(y), a), 1)))


class _CausalLM(nn.Module):
    def __init__(self, vocab: int = 8000, d: int = 256, layers: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1])
        # The mask alone, as PyTorch's language-modelling tutorial passes it: the encoder
        # compares it with a causal one to set is_causal (a check fake tensors cannot make).
        return self.head(self.encoder(self.embed(tokens), mask=mask))


def build_causal() -> nn.Module:
    """A causal language model on nn.TransformerEncoder (square subsequent mask)."""
    return _CausalLM()


def build_unet() -> nn.Module:
    """A three-level U-Net (skip connections by concatenation) for 128x128 segmentation."""
    return _UNet()


def build_mlp() -> nn.Module:
    """A wide MLP on flattened 32x32x3 images."""
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(3072, 2048),
        nn.ReLU(),
        nn.Linear(2048, 2048),
        nn.ReLU(),
        nn.Linear(2048, 10),
    )


#: name -> (builder, one sample's shape, token ids?, two batch sizes)
MODELS = {
    "vgg-cnn": (build_vgg, [3, 64, 64], False, (16, 64)),
    "resnet-small": (build_resnet, [3, 96, 96], False, (8, 32)),
    "mobilenet": (build_mobilenet, [3, 128, 128], False, (8, 32)),
    "unet": (build_unet, [3, 128, 128], False, (4, 16)),
    "lstm": (build_lstm, [128], True, (16, 64)),
    "gru-seq2seq": (build_gru_seq2seq, [64], True, (8, 32)),
    "transformer-encoder": (build_encoder, [128], True, (8, 32)),
    "encoder-decoder": (build_encdec, [64], True, (8, 32)),
    "gpt-decoder": (build_gpt, [256], True, (4, 16)),
    "causal-encoder": (build_causal, [128], True, (8, 32)),
    "mlp": (build_mlp, [3, 32, 32], False, (32, 256)),
}

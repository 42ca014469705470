"""GPT-2's transformer block in torch.nn, shared by the PyTorch baselines (bench/step_torch.py on the
CPU, bench/gpu_torch.py on a GPU): pre-LayerNorm, causal self-attention, tanh-GELU MLP. How the
causal attention is computed is the caller's: `attend(q, k, v)` takes and returns [B, heads, T, hs]
(a masked softmax on torch 1.x, F.scaled_dot_product_attention where torch has it)."""
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, C, NH, attend):
        super().__init__()
        self.n_head = NH
        self.attend = attend
        self.ln_1 = nn.LayerNorm(C, eps=1e-5)
        self.c_attn = nn.Linear(C, 3 * C)
        self.attn_proj = nn.Linear(C, C)
        self.ln_2 = nn.LayerNorm(C, eps=1e-5)
        self.c_fc = nn.Linear(C, 4 * C)
        self.mlp_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = self.attend(q, k, v)
        x = x + self.attn_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

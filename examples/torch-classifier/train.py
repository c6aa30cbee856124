"""A tiny training step: proves the image's PyTorch sees the GPU and its CUDA."""

import torch

print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}")
print(f"GPU available: {torch.cuda.is_available()}")
device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(16, 2).to(device)
loss = model(torch.randn(8, 16, device=device)).sum()
loss.backward()
print(f"one step on {device}: loss {loss.item():.4f}")

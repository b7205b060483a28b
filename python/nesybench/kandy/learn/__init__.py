"""Learning on KANDY curricula (paper §4, supp. §2-3): neural baselines in four settings,
continual-learning metrics, the Aleph baseline, tables and figures.

Modules: :mod:`.data` (decoded curriculum tensors, class-balanced epochs), :mod:`.models`
(MLP, CNN, ResNet-50, ViT-16), :mod:`.augment` (crops, flips, colour jitter),
:mod:`.replay` (class-balanced reservoir), :mod:`.strategies` (continual-learning
strategies), :mod:`.settings` (training),
:mod:`.metrics` (accuracy matrix, forgetting, BWT, FWT), :mod:`.aleph` (Aleph per task),
:mod:`.cells` (sweep-runner run functions ``kandy.train`` / ``kandy.aleph``), :mod:`.report`
(Tables 1-2, Figures 2-6). Importing this package does not import torch.
"""

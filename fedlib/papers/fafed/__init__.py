"""FAFED: Faster Adaptive Federated Learning (Wu, Huang, Hu, Huang; AAAI 2023).

The paper's account (algorithms, the Theorem 1 example, settings, the ambiguities A1, ... this replication resolves)
is docs/papers/fafed.md. Artefacts, in report order: Table 1 (the paper's complexity table), the Theorem 1
counterexample, Figure 1 (language modelling), Figure 2 with the supplementary moderate/high figures, and the
Fashion-MNIST test-accuracy table (one module each).
"""
from fedlib.reporting.artefact import Paper

PAPER = Paper(
    key="fafed",
    title="Faster Adaptive Federated Learning",
    authors=("Xidong Wu", "Feihu Huang", "Zhengmian Hu", "Heng Huang"),
    venue="AAAI 2023 (arXiv:2212.00974)",
    doc="docs/papers/fafed.md",
)
ARTEFACTS = ("table1", "theorem1", "fig1", "fig2", "fmnist_accuracy")

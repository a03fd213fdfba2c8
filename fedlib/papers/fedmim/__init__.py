"""FedMIM: multi-step inertial momentum for local consistency in federated learning.

The paper's account (method, settings, the ambiguities A1, ... this replication resolves, the paper's internal
inconsistencies) is docs/papers/fedmim.md. Artefacts, in report order: Tables I-III and Figure 2 (one module each).
"""
from fedlib.reporting.artefact import Paper

PAPER = Paper(
    key="fedmim",
    title="Enhance Local Consistency in Federated Learning: A Multi-Step Inertial Momentum Approach",
    authors=("Yixing Liu", "Yan Sun", "Zhengtao Ding", "Li Shen", "Bo Liu", "Dacheng Tao"),
    venue="arXiv:2302.05726 (2023)",
    doc="docs/papers/fedmim.md",
)
ARTEFACTS = ("table1", "table2", "table3", "fig2")

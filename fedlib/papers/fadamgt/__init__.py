"""FAdamET / FAdamGT: adaptive federated optimisation with parameter tracking.

The paper's account (settings, update rules, the ambiguities A1, ... this replication resolves) is
docs/papers/fadamgt.md. Artefacts, in report order: Table 1 and Figures 2-4 (one module each).
"""
from fedlib.reporting.artefact import Paper

PAPER = Paper(
    key="fadamgt",
    title="Parameter Tracking in Federated Learning with Adaptive Optimization",
    authors=("Evan Chen", "Jianing Zhang", "Shiqiang Wang", "Chaoyue Liu", "Christopher Brinton"),
    venue="Preprint (work in progress), Purdue University and IBM T. J. Watson Research Center",
    doc="docs/papers/fadamgt.md",
)
ARTEFACTS = ("table1", "fig2", "fig3", "fig4")

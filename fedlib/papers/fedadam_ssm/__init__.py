"""FedAdam-SSM: sparse federated Adam with a shared sparse mask (Deng et al., arXiv:2405.17932).

The paper's account (algorithms, bit formulas, the ambiguities A1–A15 this replication resolves) is
docs/papers/fedadam_ssm.md. Artefacts, in report order: Figure 1 (update magnitudes), Table I (communication to the
target accuracy), Figure 2 (accuracy vs uplink; Table I's runs), Figures 3–5 (FedAdam-SSM's sensitivity to L, η, α).
"""
from fedlib.reporting.artefact import Paper

PAPER = Paper(
    key="fedadam_ssm",
    title="Towards Communication-efficient Federated Learning via Sparse and Aligned Adaptive Optimization",
    authors=("Xiumei Deng", "Jun Li", "Kang Wei", "Long Shi", "Zehui Xiong", "Ming Ding", "Wen Chen", "Shi Jin",
             "H. Vincent Poor"),
    venue="arXiv:2405.17932 (v2)",
    doc="docs/papers/fedadam_ssm.md",
)
ARTEFACTS = ("fig1", "table1", "fig2", "fig3", "fig4", "fig5")

"""What the FAFED paper prints and states (data only, transcribed exactly; docs/papers/fafed.md).

Wu, Huang, Hu, Huang, "Faster Adaptive Federated Learning", AAAI 2023 (arXiv 2212.00974). The supplementary
material (network structures, moderate/high figures, test-accuracy tables) is not part of the source text.
"""
from __future__ import annotations

# ------------------------------------------------------------------------------------------------------- Table 1
TABLE1_CAPTION = (
    "Complexity comparison of FedAvg and typical adaptive FL algorithms for finding an ϵ-stationary point. Sample "
    "complexity denotes the number of calls to the First-order Oracle (IFO) by all worker nodes to reach an "
    "ϵ-stationary point. Communication complexity is defined as the total number of back-and-forth communication "
    "rounds between each worker node and the central server required to reach an ϵ-stationary point.")
TABLE1_COLUMNS = ("Algorithm", "Reference", "Sample", "Communication", "Adaptivity")
TABLE1 = (
    ("FedAvg", ("yang2021", "karimireddy2020b"), "O(ϵ^-4)", "O(ϵ^-4)", False),
    ("FedAdagrad", ("reddi2020",), "O(ϵ^-4)", "O(ϵ^-4)", True),
    ("FedYogi", ("reddi2020",), "O(ϵ^-4)", "O(ϵ^-4)", True),
    ("FedAdam", ("reddi2020",), "O(ϵ^-4)", "O(ϵ^-4)", True),
    ("FedAMS", ("wang2022",), "O(ϵ^-4)", "O(ϵ^-4)", True),
    ("FAFED", ("ours",), "Õ(ϵ^-3)", "Õ(ϵ^-2)", True),
)
# complexities stated in the text (§Related work, Remark 1) but not in Table 1
TEXT_COMPLEXITIES = (
    ("FedAvg, partial participation", ("yang2021", "karimireddy2020b"), "O(ϵ^-4)", "O(ϵ^-4)"),
    ("Parallel Restarted SGD, Momentum SGD", ("yu2019a", "yu2019b"), "O(ϵ^-4)", "O(ϵ^-3)"),
    ("SCAFFOLD", ("karimireddy2020b",), "as FedAvg", "as FedAvg"),
    ("FedProx (gradient similarity)", ("li2020",), "–", "O(ϵ^-2)"),
    ("Fed-GLOMO", ("das2022",), "O(ϵ^-3)", "O(ϵ^-3)"),
    ("STEM", ("khanduri2021",), "O(ϵ^-3)", "O(ϵ^-2)"),
    ("FAFED, Remark 1 (q = (T/N²)^(1/3), B = bq)", ("ours",), "Õ(N^-1 ϵ^-3) per worker", "Õ(ϵ^-2) rounds"),
)
CITATIONS = {       # key: (as Table 1 cites it, the reference)
    "yang2021": ("Yang, Fang, and Liu 2021", "Achieving linear speedup with partial worker participation in non-IID "
                 "federated learning. ICLR."),
    "karimireddy2020b": ("Karimireddy et al. 2020b", "SCAFFOLD: Stochastic controlled averaging for federated "
                         "learning. ICML."),
    "reddi2020": ("Reddi et al. 2020", "Adaptive federated optimization. arXiv:2003.00295 (ICLR 2021)."),
    "wang2022": ("Wang, Lin, and Chen 2022", "Communication-efficient adaptive federated learning. ICML."),
    "yu2019a": ("Yu, Jin, and Yang 2019", "On the linear speedup analysis of communication efficient momentum SGD for "
                "distributed non-convex optimization. ICML."),
    "yu2019b": ("Yu, Yang, and Zhu 2019", "Parallel restarted SGD with faster convergence and less communication. "
                "AAAI."),
    "li2020": ("Li et al. 2020", "Federated optimization in heterogeneous networks. MLSys."),
    "das2022": ("Das et al. 2022", "Faster non-convex federated learning via global and local momentum. UAI."),
    "khanduri2021": ("Khanduri et al. 2021", "STEM: A stochastic two-sided momentum algorithm achieving near-optimal "
                     "sample and communication complexities for federated learning. NeurIPS."),
    "ours": ("Our work", "Wu, Huang, Hu, and Huang 2023, this paper."),
}

# ------------------------------------------------------------------------------------------------------- Theorem 1
THEOREM1_TEXT = ("Suppose the sequence {x̄_t} are generated from algorithm 1 using stochastic partial derivatives. "
                 "{x̄_t} might fail to converge to non-stationary points regardless of tuning parameter selection.")
THEOREM1_SETTING = {"eta": 0.1, "beta": 0.5, "x0": 10.0, "v0": 0.0, "n_workers": 3}
# printed in the paper after the first update (truncated, A14): x_{1,1}, x_{1,2} = x_{1,3}, x̄
THEOREM1_PRINTED = {"x_1_1": "9.858", "x_1_2": "10.14", "xbar_1": "10.05"}
THEOREM1_FUNCTIONS = ("f_1 = 3x² (|x| ≤ 1), 6|x| − 2 (|x| > 1)", "f_2 = f_3 = −x² (|x| ≤ 1), −2|x| + 1 (|x| > 1)",
                      "f = x²/3 (|x| ≤ 1), 2|x|/3 (|x| > 1)")

# ------------------------------------------------------------------------------------------------------- settings
METHODS = ("fedavg", "scaffold", "stem", "fedopt_adam", "fedams", "fafed")       # the paper's six, figure order
NAMES = {"fedavg": "FedAvg", "scaffold": "SCAFFOLD", "stem": "STEM", "fedopt_adam": "FedAdam", "fedams": "FedAMS",
         "fafed": "FAFED", "naive_adaptive": "Algorithm 1 (naive adaptive FedAvg)"}
LM_SETTING = {"dataset": "WikiText-2", "n_workers": 16, "batch_size": 20, "q": 10, "dropout": 0.5, "clip": 0.25,
              "model": "2-layer LSTM, 650-dimensional embeddings, 650 hidden units"}
LM_STEP_SIZES = {   # §Language modeling task: "Grid search is used to choose learning rates for each optimizer."
    "fedavg": "10", "scaffold": "10 (global 1)", "fedopt_adam": "10, global 0.03 (≈10^-1.5), τ = 0.01",
    "fedams": "10, global 0.03 (≈10^-1.5), τ = 0.01", "stem": "κ̄ = 20, w = σ = 1, diminished in each epoch",
    "fafed": "ρh̄ = 1, w = 1, decreased as (5); ρ = 0.01"}
MOMENTUM_SET = (0.1, 0.9)          # α_t, β, β1, β2 "are chosen from the set {0.1, 0.9}" (values not reported)
IMAGE_SETTING = {"n_workers": 20, "lr_grid": (0.001, 0.01, 0.02, 0.05, 0.1),
                 "global_lr_grid": (10 ** -1.5, 10 ** -2, 10 ** -2.5), "tau": 0.01, "scaffold_global_lr": 1.0,
                 "batch_grid": (5, 50, 100), "q_grid": (5, 10, 20), "low_similarity": 0.95}
SETTINGS = ("low", "moderate", "high")          # heterogeneity, in increasing order
DATASETS = {"mnist": "MNIST", "fashion_mnist": "Fashion-MNIST", "cifar10": "CIFAR-10", "wikitext2": "WikiText-2"}

# ------------------------------------------------------------------------------------------------------- captions
FIG1_CAPTION = "Experimental results of WikiText2 for language modeling task."
FIG2_CAPTION = "Training loss vs the number of communication rounds for low heterogeneity setting."

# ------------------------------------------------------------------------------------------------------- panels
#: the panels of Figure 2 and of the supplementary figures the text announces ("on three datasets with different
#: heterogeneity setting"); the supplementary figures are not available, their panels are inferred from that sentence
FIG2_PANELS = {"low": ("mnist", "fashion_mnist", "cifar10"), "moderate": ("mnist", "fashion_mnist", "cifar10"),
               "high": ("mnist", "fashion_mnist", "cifar10")}
FIG2_SOURCE = {"low": "Figure 2", "moderate": "supplementary figure", "high": "supplementary figure"}
IMAGE_LEVELS = {   # §Image classification tasks: how the paper describes each heterogeneity setting
    "low": "95 % similarity between workers' data",
    "moderate": "disjoint sets, each worker holds part of the data of all classes",
    "high": "disjoint sets, each worker holds 5 of the 10 classes"}

# ------------------------------------------------------------------------------------------------------- claims
#: id -> (the paper's sentence, exact words, with `...` only where the paper's sentence goes on; its section)
CLAIMS = {
    "fig1_best": ("Our FAFED algorithm outperforms all other baseline optimizers.",
                  "§Language Modeling Task (Figure 1)"),
    "fig1_fedadam_fluctuation": ("Although FedAdam also has a good performance with an adaptive learning rate, it "
                                 "presents clear fluctuation at the beginning of the training phase because it "
                                 "utilizes the global adaptive method.", "§Language Modeling Task (Figure 1)"),
    "fig1_fedams_worse": ("FedAMS is worse because the adaptive term of FAFED and FedAdam is more flexible, while the "
                          "adaptive term is monotonically increasing in FedAMS.", "§Language Modeling Task (Figure 1)"),
    "fig2_best": ("From Figures, we can find that our algorithms consistently outperform the other baseline "
                  "algorithms.", "§Image Classification Tasks (Figure 2 and the supplementary figures)"),
    "fig2_fluctuation": ("Compared with FedAdam and FedAMS, our adaptive method has lower fluctuation (e.g., the "
                         "beginning phase of FedAdam).", "§Image Classification Tasks (Figure 2 and the supplementary "
                                                         "figures)"),
    "acc_best": ("FAFED performs well under all conditions.",
                 "§Image Classification Tasks (supplementary test-accuracy tables)"),
    "acc_falls": ("Although, with the increasing data heterogeneity, model training becomes more difficult.",
                  "§Image Classification Tasks (supplementary test-accuracy tables)"),
    "theorem1": ("theorem 1 uses an example to present the details of step update in the algorithm 1 and shows that "
                 "in some cases, divergence is unavoidable no matter how we choose the tuning parameters.",
                 "§Divergence of Local Adaptive Federated Learning (Theorem 1)"),
    "theorem1_first_step": ("Thus, after the first update, we have x_{1,1} = 10 − 0.1/(3√2) × 6 = 9.858, and "
                            "x_{1,2} = x_{1,3} = 10 + 0.1/√2 × 2 = 10.14, and we have x̄ = 10.05.",
                            "§Divergence of Local Adaptive Federated Learning (proof of Theorem 1)"),
    "theorem1_closed_form": ("As a result, the averaged model parameter will update η/(3√(1 − β^t)). It is the "
                             "opposite of the direction of convergence and is independent of the choice of "
                             "parameters η and β.",
                             "§Divergence of Local Adaptive Federated Learning (proof of Theorem 1)"),
    "theorem1_fix": ("Thus, we use the sharing adaptive learning rate in the Algorithm 2 to avoid divergence.",
                     "§Divergence of Local Adaptive Federated Learning (end of the proof of Theorem 1)"),
    "table1_rates": ("Our algorithm is the first adaptive FL algorithm to reach the best-known samples complexity "
                     "O(ϵ^-3) and communication complexity O(ϵ^-2) to find an ϵ-stationary point without large "
                     "batches.", "§Introduction (contributions), Table 1"),
}
#: a paper inconsistency that no claim tests (the page states it): Theorem 1's printed f_1 is not continuous
THEOREM1_F1_JUMP = ("As printed, f_1 jumps at |x| = 1: 3x² → 3 inside, 6|x| − 2 → 4 outside (6|x| − 3 would join), "
                    "so f jumps by 1/3 there. The derivatives do join (6 and −2), so every gradient and iterate of "
                    "the example is as the paper states: an inconsistency of the printed functions, not of the "
                    "argument (A14 in docs/papers/fafed.md).")

"""The FedAdam-SSM paper's printed numbers and settings, transcribed exactly (data only; docs/papers/fedadam_ssm.md).

Keys: tasks `fmnist_cnn` (CNN on Fashion-MNIST), `svhn_resnet` (ResNet-18 on SVHN), `cifar_vgg` (VGG-11 on
CIFAR-10); settings `iid`, `noniid`; algorithms by their fedlib names. `INF` is the paper's ∞ ("impossible to achieve
the target test accuracy during the training process").
"""
from __future__ import annotations

import math

INF = math.inf

TASKS = ("fmnist_cnn", "svhn_resnet", "cifar_vgg")                # Table I's column order
TASK_NAMES = {"fmnist_cnn": "CNN on Fashion-MNIST", "svhn_resnet": "ResNet on SVHN", "cifar_vgg": "VGG-11 on CIFAR-10"}
SETTINGS = ("iid", "noniid")
SETTING_NAMES = {"iid": "IID", "noniid": "Non-IID"}

ALGORITHMS = ("fedadam_ssm", "fedadam_top", "fairness_top", "fedadam_ssm_m", "fedadam_ssm_v", "fedadam_local",
              "onebit_adam", "efficient_adam")                       # Table I's row order
ALGORITHM_NAMES = {"fedadam_ssm": "FedAdam-SSM", "fedadam_top": "FedAdam-Top", "fairness_top": "Fairness-Top",
                   "fedadam_ssm_m": "FedAdam-SSM_M", "fedadam_ssm_v": "FedAdam-SSM_V", "fedadam_local": "FedAdam",
                   "onebit_adam": "1-bit Adam", "efficient_adam": "Efficient Adam"}

# §VII-A
HYPERPARAMETERS = {"n_devices": 20, "local_epochs_L": 30, "lr": 0.001, "keep_ratio": 0.05, "beta1": 0.9,
                   "beta2": 0.999, "eps": 1e-6, "dirichlet_theta": 0.1}

# Table I: target test accuracy (%) per task and setting (printed in the FedAdam-SSM rows only)
TARGET_ACC = {
    "iid": {"fmnist_cnn": 80.4, "svhn_resnet": 80.2, "cifar_vgg": 62.4},
    "noniid": {"fmnist_cnn": 79.8, "svhn_resnet": 74.4, "cifar_vgg": 56.2},
}

# Table I: "Comm." (Mbit) per setting, algorithm, task
COMM_MBIT = {
    "iid": {
        "fedadam_ssm": {"fmnist_cnn": 8.15, "svhn_resnet": 591.0, "cifar_vgg": 2073.0},
        "fedadam_top": {"fmnist_cnn": 11.3, "svhn_resnet": 1959.1, "cifar_vgg": 11605.0},
        "fairness_top": {"fmnist_cnn": 17.1, "svhn_resnet": 1623.0, "cifar_vgg": 4327.0},
        "fedadam_ssm_m": {"fmnist_cnn": INF, "svhn_resnet": INF, "cifar_vgg": 11651.0},
        "fedadam_ssm_v": {"fmnist_cnn": INF, "svhn_resnet": 1870.7, "cifar_vgg": INF},
        "fedadam_local": {"fmnist_cnn": 24.0, "svhn_resnet": 2641.8, "cifar_vgg": 18559.0},
        "onebit_adam": {"fmnist_cnn": INF, "svhn_resnet": INF, "cifar_vgg": INF},
        "efficient_adam": {"fmnist_cnn": INF, "svhn_resnet": INF, "cifar_vgg": INF},
    },
    "noniid": {
        "fedadam_ssm": {"fmnist_cnn": 13.0, "svhn_resnet": 737.3, "cifar_vgg": 8161.0},
        "fedadam_top": {"fmnist_cnn": 24.5, "svhn_resnet": 1521.1, "cifar_vgg": 11172.0},
        "fairness_top": {"fmnist_cnn": 31.5, "svhn_resnet": 1059.3, "cifar_vgg": 8966.0},
        "fedadam_ssm_m": {"fmnist_cnn": INF, "svhn_resnet": INF, "cifar_vgg": 17951.0},
        "fedadam_ssm_v": {"fmnist_cnn": INF, "svhn_resnet": 2042.1, "cifar_vgg": INF},
        "fedadam_local": {"fmnist_cnn": 70.0, "svhn_resnet": 2556.0, "cifar_vgg": 27400.0},
        "onebit_adam": {"fmnist_cnn": INF, "svhn_resnet": INF, "cifar_vgg": INF},
        "efficient_adam": {"fmnist_cnn": INF, "svhn_resnet": INF, "cifar_vgg": INF},
    },
}

# Table I: the printed factor "(r×)" = baseline Comm. / FedAdam-SSM Comm. (finite entries only)
FACTORS = {
    "iid": {
        "fedadam_top": {"fmnist_cnn": 1.39, "svhn_resnet": 3.31, "cifar_vgg": 5.59},
        "fairness_top": {"fmnist_cnn": 2.09, "svhn_resnet": 2.74, "cifar_vgg": 2.09},
        "fedadam_ssm_m": {"cifar_vgg": 5.62},
        "fedadam_ssm_v": {"svhn_resnet": 3.16},
        "fedadam_local": {"fmnist_cnn": 2.94, "svhn_resnet": 4.47, "cifar_vgg": 8.95},
    },
    "noniid": {
        "fedadam_top": {"fmnist_cnn": 1.88, "svhn_resnet": 2.06, "cifar_vgg": 1.37},
        "fairness_top": {"fmnist_cnn": 2.42, "svhn_resnet": 1.44, "cifar_vgg": 1.10},
        "fedadam_ssm_m": {"cifar_vgg": 2.19},
        "fedadam_ssm_v": {"svhn_resnet": 2.77},
        "fedadam_local": {"fmnist_cnn": 5.38, "svhn_resnet": 3.47, "cifar_vgg": 3.36},
    },
}

# §VII-B2 text: FedAdam-SSM's test-accuracy improvement (%, "approximately") over each baseline, per task and setting
FIG2_IMPROVEMENT = {
    "iid": {
        "fmnist_cnn": {"fedadam_top": 1.3, "fairness_top": 2.9, "fedadam_ssm_m": 8.2, "fedadam_ssm_v": 10.9,
                       "fedadam_local": 3.7, "onebit_adam": 14.4, "efficient_adam": 21.8},
        "svhn_resnet": {"fedadam_top": 4.5, "fairness_top": 1.1, "fedadam_ssm_m": 9.6, "fedadam_ssm_v": 1.9,
                        "fedadam_local": 2.3, "onebit_adam": 22.0, "efficient_adam": 23.1},
        "cifar_vgg": {"fedadam_top": 4.1, "fairness_top": 1.5, "fedadam_ssm_m": 3.8, "fedadam_ssm_v": 10.7,
                      "fedadam_local": 4.8, "onebit_adam": 15.2, "efficient_adam": 14.4},
    },
    "noniid": {
        "fmnist_cnn": {"fedadam_top": 1.8, "fairness_top": 2.5, "fedadam_ssm_m": 9.7, "fedadam_ssm_v": 10.7,
                       "fedadam_local": 11.7, "onebit_adam": 17.3, "efficient_adam": 39.3},
        "svhn_resnet": {"fedadam_top": 4.3, "fairness_top": 2.9, "fedadam_ssm_m": 10.7, "fedadam_ssm_v": 5.1,
                        "fedadam_local": 6.4, "onebit_adam": 20.2, "efficient_adam": 24.9},
        "cifar_vgg": {"fedadam_top": 2.7, "fairness_top": 5.9, "fedadam_ssm_m": 6.1, "fedadam_ssm_v": 18.4,
                      "fedadam_local": 5.9, "onebit_adam": 36.5, "efficient_adam": 39.6},
    },
}

# §VII-B2 summary sentences: the quoted ranges of the improvement (%) and of the convergence-rate factors
FIG2_SUMMARY_RANGES = {"fedadam_ssm_m": (3.8, 10.9), "fedadam_ssm_v": (1.9, 18.4), "fedadam_top": (1.3, 4.5),
                       "fairness_top": (1.1, 2.9), "onebit_adam": (15.2, 36.5), "efficient_adam": (14.5, 39.6)}
ABSTRACT_CLAIMS = {"speedup_vs_sparse": 1.1, "accuracy_gain_vs_quantized_pct": 14.5}
RATE_CLAIMS = {"fedadam_ssm_m": "over 2.19x", "fedadam_ssm_v": "over 2.77x", "fedadam_top": "1.37x ~ 5.59x",
               "fairness_top": "1.10x ~ 2.74x"}

# Fig. 1 (§VII-B1): where the log-magnitudes of the updates lie (log base not stated). The CNN panel is described by
# the centre of each density, the other two by a range (low, high).
FIG1 = {
    "fmnist_cnn": {"dW": {"centre": -2.0}, "dM": {"centre": -3.0}, "dV": {"centre": -6.0}},
    "svhn_resnet": {"dW": {"range": (-7.5, -4.0)}, "dM": {"range": (-12.5, -8.0)}, "dV": {"range": (-20.0, -15.0)}},
    "cifar_vgg": {"dW": {"range": (-10.0, -5.0)}, "dM": {"range": (-25.0, -10.0)}, "dV": {"range": (-35.0, -20.0)}},
}

# Figs. 3–5: the paper gives no grid values; these are the qualitative statements of §VII-B3
SENSITIVITY_TEXT = {
    "L": "“the convergence rate shows a decreasing trend as L increases”, and in the same paragraph “increasing "
         "local epoch L can … improve the convergence rate … increasing L too much … slows down the convergence”; "
         "read together with Remark 6 (the rate bound falls with L up to a threshold L*, then rises), this page "
         "tests one reading: a larger L first speeds convergence up (fewer rounds to the target), then slows it "
         "down (F3.2); and the test accuracy first increases, then decreases as L increases (F3.1)",
    "lr": "increasing η first improves test accuracy and speeds up convergence; a too large η compromises accuracy",
    "keep_ratio": "increasing the sparsification ratio α improves test accuracy and speeds up convergence "
                  "(the text says 'learning rate η', a typo)",
}

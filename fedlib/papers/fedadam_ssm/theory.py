"""The closed forms of the FedAdam-SSM paper's Theorem 1 and Proposition 1 (eqs. 17–23, 26–27), in float64.

Theorem 1 bounds ‖w_n^{l,t} − w̌^{l,t}‖ (the sparse run against centralised Adam) by Γ‖ΔW error‖ + Λ‖ΔM error‖ +
Θ‖ΔV error‖ + Φ. With s = sqrt(ψ² + 4ϕ), r± = (ψ ± s)/2 and c = β1(1 − β2) d G² η ρ / (ε√ε):

    ϕ = β1/√β2
    ψ = 1 + β1/√β2 + (ηρ(1 − β1)/√ε)(1 + (1 − β2) d G²/ε)
    χ = dGη(2β1(1 − √β2)/(ε√(εβ2))·(G² + ε) + (1 − β1)β2G²/(ε√ε)) + (1 − β1)η(σ_l/√D̃ + σ_g)/√ε·(1 + (1 − β2)dG²/ε)
    Γ = (1/s)[r₋^l(ϕ + (s − ψ)/2 − c) + ((s + ψ)/2 − ϕ + c) r₊^l]
    Λ = ηβ1/(√ε s)·(r₊^l − r₋^l)
    Θ = √d Gηβ2/(2ε√ε s)·(r₊^l − r₋^l)          (printed with the product r₊^l·r₋^l: a typo, see `theta_as_printed`)
    Φ = (σ_l/√D̃ + σ_g)/s·(η(1 − β1)/√ε + dG²η(1 − β2)/(ε√ε))(r₊^l − r₋^l)
        + χ/(1 − ψ − ϕ)·((1/s)((1 − r₊)r₋^l − (1 − r₋)r₊^l) + 1)

Proposition 1: β2 < 1 − 1/(1 + 2Gρ√d) implies Γ > Θ > Λ. The values grow like r₊^l (about 1e190 at l = 30 for the
reference constants), so the bound itself is numerically vacuous; only the ordering is informative.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Constants:
    """The quantities of the bound (paper values for the optimiser; G, ρ, σ are unknown and set by the caller)."""

    d: int
    l: int = 30                   # noqa: E741 -- the paper's local-step index
    eta: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-6
    G: float = 1.0
    rho: float = 1.0
    sigma_l: float = 1.0
    sigma_g: float = 1.0
    batch: int = 64


def _roots(k: Constants) -> tuple[float, float, float, float, float]:
    phi = k.beta1 / math.sqrt(k.beta2)
    psi = 1 + phi + (k.eta * k.rho * (1 - k.beta1) / math.sqrt(k.eps)) * (1 + (1 - k.beta2) * k.d * k.G ** 2 / k.eps)
    s = math.sqrt(psi ** 2 + 4 * phi)
    return phi, psi, s, (psi + s) / 2, (psi - s) / 2


def coefficients(k: Constants) -> dict[str, float]:
    """Γ, Λ, Θ, Φ at step l, and ψ, ϕ, χ, r±."""
    phi, psi, s, rp, rm = _roots(k)
    e32 = k.eps * math.sqrt(k.eps)
    c = k.beta1 * (1 - k.beta2) * k.d * k.G ** 2 * k.eta * k.rho / e32
    noise = k.sigma_l / math.sqrt(k.batch) + k.sigma_g
    chi = (k.d * k.G * k.eta * (2 * k.beta1 * (1 - math.sqrt(k.beta2)) / (k.eps * math.sqrt(k.eps * k.beta2))
                                * (k.G ** 2 + k.eps) + (1 - k.beta1) * k.beta2 * k.G ** 2 / e32)
           + (1 - k.beta1) * k.eta * noise / math.sqrt(k.eps) * (1 + (1 - k.beta2) * k.d * k.G ** 2 / k.eps))
    diff = rp ** k.l - rm ** k.l
    gamma = (rm ** k.l * (phi + (s - psi) / 2 - c) + ((s + psi) / 2 - phi + c) * rp ** k.l) / s
    lam = k.eta * k.beta1 / (math.sqrt(k.eps) * s) * diff
    theta = math.sqrt(k.d) * k.G * k.eta * k.beta2 / (2 * e32 * s) * diff
    big_phi = (noise / s * (k.eta * (1 - k.beta1) / math.sqrt(k.eps) + k.d * k.G ** 2 * k.eta * (1 - k.beta2) / e32)
               * diff + chi / (1 - psi - phi) * (((1 - rp) * rm ** k.l - (1 - rm) * rp ** k.l) / s + 1))
    return {"Gamma": gamma, "Lambda": lam, "Theta": theta, "Phi": big_phi, "psi": psi, "phi": phi, "chi": chi,
            "r_plus": rp, "r_minus": rm, "c": c}


def theta_as_printed(k: Constants) -> float:
    """Eq. (19) read literally, with the product r₊^l · r₋^l."""
    phi, psi, s, rp, rm = _roots(k)
    return math.sqrt(k.d) * k.G * k.eta * k.beta2 / (2 * k.eps * math.sqrt(k.eps) * s) * (rp ** k.l * rm ** k.l)


def prop1_threshold(d: int, G: float = 1.0, rho: float = 1.0) -> float:
    """Proposition 1's sufficient condition: β2 < 1 − 1/(1 + 2Gρ√d)."""
    return 1 - 1 / (1 + 2 * G * rho * math.sqrt(d))


def min_g_rho_for(beta2: float, d: int) -> float:
    """The smallest Gρ for which β2 satisfies Proposition 1's condition at dimension d."""
    return (1 / (1 - beta2) - 1) / (2 * math.sqrt(d))

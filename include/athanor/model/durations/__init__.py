"""Task-duration distributions: censored maximum-likelihood fits, model choice, mixtures, drift.

Rules this package follows (the report and the recommenders rely on them):

* **Units.** Durations are seconds. Durations below ``MIN_DURATION_S`` (1 s) are floored
  to 1 s before fitting, because job logs have one-second resolution (the Philly trace
  holds 0.0 s jobs) and every family here lives on x > 0. GPU-hour shares use the raw
  durations (a 0 s job holds no GPU time).
* **Censoring.** Preempted, cancelled and still-running jobs are right-censored at their
  observed length: they add ``logsf`` to the log-likelihood, completed and failed jobs
  add ``logpdf``. Location is fixed at 0.
* **Families.** exponential (rate_per_s), lognormal (mu, sigma of ln seconds), weibull
  (shape, scale_s), gamma (shape, scale_s), loglogistic (scipy ``fisk``: shape, scale_s).
  Each is fitted by BFGS on its log-parameters with an analytic gradient (gamma's
  shape derivative of ln Q is a forward difference), starting from the ln-moments of a
  censored lognormal fit.
* **Model choice.** The family with the lowest AIC wins; BIC is reported too. Fit is
  checked with a KS distance between the Kaplan-Meier curve and the fitted CDF, and a
  parametric-bootstrap p-value that refits the family on every simulated sample.
  Simulated samples get the same censoring pattern: censoring times are drawn from the
  reverse Kaplan-Meier estimate of the censoring distribution (mass beyond the last
  censoring time means "never censored"), and are rounded to whole seconds when the data
  are whole seconds, so ties affect real and simulated KS alike.
* **Mixtures.** When the best family's bootstrap p-value is below ``mixture_pvalue``
  (default 0.01), or at the floor 1/(B+1) that B replicates can show, lognormal
  mixtures with 2..4 components are fitted by EM on ln duration (a censored observation
  contributes the truncated-normal moments, so censoring is respected), polished by
  BFGS on the same likelihood (EM alone crawls when components overlap), from a
  quantile-spread start and two random ones. The number of components is chosen by BIC, and the mixture replaces the single family when its BIC
  is lower. It is reported with family ``lognormal_mixture`` and params
  ``{weights, mus, sigmas}``. Component sigmas are floored at 0.02 (ln units) so that a
  component cannot collapse onto a spike of tied durations.
* **Quantiles.** p50/p90/p99 of the chosen model, with percentile-bootstrap CIs
  (resample jobs with replacement, refit the chosen family). Bootstrap refits, here and
  in the p-value, start from the fitted parameters; a mixture is refitted from the fitted
  mixture (no fresh EM), which can only make its p-value slightly optimistic.
* **Beyond the data.** A quantile above the longest time any job of the group was watched
  (completed, or censored at the end of its observation) is extrapolation: records carry
  ``data_limit_s``, ``beyond_data`` (the quantile names above it) and ``censored_note`` (more
  than half the runs censored), and every surface publishes such a quantile as "> N days
  (beyond the data)" through ``published_quantiles`` (``support``).
* **Shares.** ``share_jobs_under_48h`` is the model's CDF at 48 h (the Kaplan-Meier
  value is reported beside it); ``share_gpu_hours_under_48h`` and
  ``gpu_hours_share_over_threshold`` are empirical, weighting each job by
  duration_s x gpu_count ("under" means <= the limit, "over" means > the threshold).
* **Groups and borrowing.** ``fit_groups`` fits each group with at least
  ``min_group_size`` jobs (and two distinct completed durations) on its own. A smaller
  group uses the fit of its nearest ancestor that is big enough: for
  group_by=["team", "model"] the parent is the team, then all jobs. The borrowed record
  keeps the group's own n, censoring and GPU-hour shares, takes family, params,
  quantiles and CIs from the ancestor (``borrowed_from`` names it), reports the KS
  distance of the ancestor's model to the group's own data, and leaves aic, bic and the
  p-value empty (nothing was fitted on this group). "all" is always fitted.
* **Drift.** ``compare_fits`` flags a group whose family changed or whose p90 moved by
  more than ``p90_shift`` (relative) since the previous run.
"""

from athanor.model.durations.distributions import QUANTILES, model_cdf, model_pdf, model_ppf
from athanor.model.durations.drift import compare_fits
from athanor.model.durations.families import FAMILIES, MIXTURE, fit_family
from athanor.model.durations.groups import fit_groups, group_label
from athanor.model.durations.mixtures import fit_lognormal_mixture
from athanor.model.durations.read import CENSORED_STATES, load_durations
from athanor.model.durations.sample import MIN_DURATION_S, kaplan_meier
from athanor.model.durations.selection import HOURS_48_S, DurationFit, fit_durations
from athanor.model.durations.support import (
    QUANTILE_NAMES,
    beyond_data,
    beyond_text,
    censored_note,
    published_quantiles,
)
from athanor.model.durations.table import format_table

__all__ = [
    "CENSORED_STATES",
    "FAMILIES",
    "HOURS_48_S",
    "MIN_DURATION_S",
    "MIXTURE",
    "QUANTILES",
    "QUANTILE_NAMES",
    "DurationFit",
    "beyond_data",
    "beyond_text",
    "censored_note",
    "compare_fits",
    "fit_durations",
    "fit_family",
    "fit_groups",
    "fit_lognormal_mixture",
    "format_table",
    "group_label",
    "kaplan_meier",
    "load_durations",
    "model_cdf",
    "model_pdf",
    "model_ppf",
    "published_quantiles",
]

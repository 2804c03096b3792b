"""What each cloud calls the commitments the purchase mix buys, and which savings plan covers a pool.

The optimiser is one for every cloud (`athanor.recommend.mix`): per pool it buys units of the
pool's reference instance for a term (the recommendation kind `reserved_instances`), then a $/hour
commitment on what they leave (kind `savings_plan`). Each cloud sells these under its own name:

| provider | units of one instance type in one region | $/hour across pools |
|---|---|---|
| aws | Reserved Instances (RIs) | Compute Savings Plans, across the AWS pools |
| azure | Azure reservation (VM size, region; 1 or 3 years) | Azure savings plan for compute, across the Azure pools |
| gcp | committed use discount, resource-based (the machine's GPUs, vCPUs and memory in a region; 1 or 3 years) | none for GPUs: spend-based (flexible) CUDs do not cover accelerator-optimised machines |

A savings plan covers only its own cloud's pools, so the mix sizes one per cloud that sells one
(`savings_plan_groups`). The recommendation kinds stay the same for every cloud (the plan's step
kinds, the report's tables and `recommendations.json` group by them); the action, the step and
their `offer` / `offer_name` fields carry the cloud's own words.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from athanor.recommend.mix import MixPrices, MixRecommendation
from athanor.reference import instances


@dataclass(frozen=True)
class ProviderOffers:
    provider: str  # aws | azure | gcp
    unit_offer: str  # the offer id of athanor.reference.commitment_rates.OFFERS that buys units
    savings_plan_offer: str | None  # the $/hour offer covering the provider's pools; None: none for GPUs
    payment_words: Mapping[str, str]  # payment option -> the cloud's words

    @property
    def unit_name(self) -> str:
        """What the cloud calls its units (OFFER_NAMES)."""
        return OFFER_NAMES[self.unit_offer]

    @property
    def savings_plan_name(self) -> str | None:
        return OFFER_NAMES[self.savings_plan_offer] if self.savings_plan_offer else None


# Every offer of athanor.reference.commitment_rates.OFFERS in its cloud's words.
OFFER_NAMES = {
    "standard_ri": "Reserved Instances",
    "convertible_ri": "Convertible Reserved Instances",
    "ec2_instance_sp": "EC2 Instance Savings Plan",
    "compute_sp": "compute savings plan",
    "sagemaker_sp": "SageMaker Savings Plan",
    "azure_reservation": "Azure reservation",
    "azure_savings_plan": "Azure savings plan for compute",
    "gcp_cud": "GCP committed use discount (resource-based)",
}

PROVIDERS: dict[str, ProviderOffers] = {
    "aws": ProviderOffers(
        "aws",
        "standard_ri",
        "compute_sp",
        {"no_upfront": "no upfront", "partial_upfront": "partial upfront", "all_upfront": "all upfront"},
    ),
    "azure": ProviderOffers(
        "azure",
        "azure_reservation",
        "azure_savings_plan",
        # Azure bills a reservation or savings plan monthly or upfront, at the same total.
        {"no_upfront": "billed monthly", "partial_upfront": "billed monthly", "all_upfront": "paid upfront"},
    ),
    "gcp": ProviderOffers(
        "gcp",
        "gcp_cud",
        None,
        # A resource-based commitment is billed monthly over its term; nothing is paid upfront.
        {
            "no_upfront": "billed monthly",
            "partial_upfront": "billed monthly",
            "all_upfront": "billed monthly",
        },
    ),
}


NAMES = {"aws": "AWS", "azure": "Azure", "gcp": "GCP"}


def provider_of(instance_type: str | None) -> str:
    """The cloud that sells an instance type (the catalogue's), 'aws' for a type it lacks: the
    words AWS pools always had."""
    if not instance_type:
        return "aws"
    try:
        return instances.instance(instance_type).provider
    except KeyError:
        return "aws"


def offers_of(provider: str) -> ProviderOffers:
    return PROVIDERS.get(provider, PROVIDERS["aws"])


def savings_plan_groups(provider_by_pool: Mapping[str, str]) -> dict[str, str]:
    """Pool -> the savings plan that may cover it (its cloud's), for the pools whose cloud sells
    one for GPU machines; a GCP pool gets none."""
    return {p: prov for p, prov in provider_by_pool.items() if offers_of(prov).savings_plan_offer}


def savings_plan_scopes(groups: Iterable[str]) -> dict[str, str]:
    """The scope of each savings plan bought (by group: its cloud, or 'all' for one plan over every
    pool): 'all pools' where the fleet buys one plan (the AWS fleet's scope as it always was),
    else 'all <cloud> pools'."""
    found = list(dict.fromkeys(groups))
    if len(found) <= 1:
        return {g: "all pools" for g in found}
    return {g: f"all {NAMES.get(g, g)} pools" for g in found}


def _term(months: int) -> str:
    return "3-year" if months == 36 else "1-year"


def unit_action(
    provider: str,
    pool: str,
    units: float,
    instance_type: str | None,
    gpus_per_unit: float,
    term_months: int,
    payment_option: str,
) -> str:
    """The first words of a pool's commitment row, in its cloud's vocabulary (the caller adds why)."""
    family, region = pool.split("/")[0], pool.split("/")[-1]
    words = offers_of(provider)
    payment = words.payment_words.get(payment_option, payment_option.replace("_", " "))
    many = "s" if units != 1 else ""
    if provider == "azure":
        return (
            f"Buy an Azure reservation ({_term(term_months)}, {payment}) for {units:g} more "
            f"{instance_type or family} VM{many} in {region}"
        )
    if provider == "gcp":
        gpus = units * gpus_per_unit
        return (
            f"Buy a GCP committed use discount (resource-based, {_term(term_months)}, {payment}) in "
            f"{region} for {units:g} more {instance_type or family} machine{many} ({gpus:g} GPUs with "
            f"their vCPUs and memory)"
        )
    # AWS: the words its rows always had.
    return (
        f"Reserve {units:g} more {family} unit{many} ({_term(term_months)}, "
        f"{payment_option.replace('_', ' ')}) in {region}"
    )


def savings_plan_action(provider: str, hourly_commitment: float) -> str:
    if provider == "azure":
        return f"Buy an Azure savings plan for compute of ${hourly_commitment:,.3f}/hour (1-year, billed monthly)"
    return f"Buy a compute savings plan of ${hourly_commitment:,.3f}/hour"


def pool_providers(pools: Iterable[str], instance_type_of_family: Mapping[str, str]) -> dict[str, str]:
    """Pool ('family/region') -> the cloud of its family's reference instance type."""
    return {str(p): provider_of(instance_type_of_family.get(str(p).split("/")[0])) for p in pools}


def by_cloud(prices: MixPrices, provider_by_pool: Mapping[str, str]) -> MixPrices:
    """`prices` with each savings-plan discount kept only where the pool's cloud sells a savings
    plan for it, and each pool named under its cloud's plan (MixPrices.sp_group_by_pool)."""
    groups = savings_plan_groups(provider_by_pool)
    discounts = {p: d for p, d in (prices.sp_discount_by_pool or {}).items() if p in groups}
    return replace(prices, sp_discount_by_pool=discounts, sp_group_by_pool=groups)


def reference_type(family: str) -> str | None:
    """A family's pool unit: its largest size in the catalogue (as ref_instance_families picks it)."""
    sizes = [t for t in instances.instance_types() if t.instance_family == family]
    return max(sizes, key=lambda t: t.normalization_factor).instance_type if sizes else None


def explain_words(
    rec: MixRecommendation, facts: Mapping[str, Mapping[str, object]]
) -> tuple[dict[str, str], dict[str, str]]:
    """What `mix.explain` says in a cloud's words instead of AWS's, for the pools and savings plans
    of the other clouds (AWS keeps the words it always had): pool -> its purchase, group -> its
    savings plan's name. `facts`: `nightly.commitment_facts`, by pool."""
    pool_words = {}
    for p in rec.pools:
        provider = str(facts.get(p.pool, {}).get("provider", "aws"))
        if p.plan.commit_units > 0 and provider != "aws":
            itype = facts.get(p.pool, {}).get("instance_type")
            pool_words[p.pool] = unit_action(
                provider,
                p.pool,
                p.plan.commit_units,
                str(itype) if itype else None,
                p.gpus_per_unit,
                p.plan.term_months,
                p.plan.payment_option,
            )
    plan_words = {
        g: name
        for g in rec.hourly_by_plan
        if g not in ("aws", "all") and (name := offers_of(g).savings_plan_name)
    }
    return pool_words, plan_words


def is_sagemaker_pool(pool: str) -> bool:
    """A pool of SageMaker's ml.* instances (sql/reference/instance_types.sql): only a SageMaker
    Savings Plan covers it, no Reserved Instance and no EC2 Instance or Compute Savings Plan."""
    return str(pool).startswith("ml.")


def unit_offer(provider: str, pool: str, rates: str | None) -> tuple[str, str]:
    """(offer, its name) a pool's units are bought as: the offer whose published rate priced them
    (`rates`, the label of athanor.reference.commitment_rates.CommitmentRate: '...: <offer>
    <term>-month ...'), else a SageMaker pool's SageMaker Savings Plan, else the cloud's own."""
    for offer, name in OFFER_NAMES.items():
        if rates and rates.startswith("published") and f": {offer} " in rates:
            return offer, name
    if is_sagemaker_pool(pool):
        return "sagemaker_sp", OFFER_NAMES["sagemaker_sp"]
    words = offers_of(provider)
    return words.unit_offer, words.unit_name


def plan_scopes(rec: MixRecommendation) -> dict[str, str]:
    """The scope of each savings plan the mix bought (`savings_plan_scopes`), counting every cloud
    whose pools a plan could cover: an Azure plan beside AWS pools no plan was bought for is 'all
    Azure pools', not 'all pools'."""
    groups = rec.assumptions.get("sp_group_by_pool")
    discounts = rec.assumptions.get("sp_discount_by_pool")
    if not isinstance(groups, Mapping) or not isinstance(discounts, Mapping):
        return savings_plan_scopes(rec.hourly_by_plan)
    eligible = [str(g) for p, g in groups.items() if float(discounts.get(p, 0.0)) > 0]
    return savings_plan_scopes([*rec.hourly_by_plan, *eligible])

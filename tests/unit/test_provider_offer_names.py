"""Each commitment offer has one name, which the cloud's words and the steps' offer_name share."""

from __future__ import annotations

from athanor.recommend import provider_offers
from athanor.reference.commitment_rates import OFFERS


def test_every_published_offer_has_one_name() -> None:
    assert set(provider_offers.OFFER_NAMES) == set(OFFERS)


def test_a_clouds_unit_and_plan_names_are_its_offers_names() -> None:
    azure = provider_offers.offers_of("azure")
    assert (azure.unit_name, azure.savings_plan_name) == (
        "Azure reservation",
        "Azure savings plan for compute",
    )
    gcp = provider_offers.offers_of("gcp")
    assert (gcp.unit_name, gcp.savings_plan_name) == ("GCP committed use discount (resource-based)", None)
    aws = provider_offers.offers_of("aws")
    assert (aws.unit_name, aws.savings_plan_name) == ("Reserved Instances", "compute savings plan")

"""The quarantine computes a rule's name on every row and its reason only where a name was found
(``parquet_input._problems``): that is exact only if every rule has a name iff it has a reason."""

from snapcheck.spark_validation.parquet_input import REF_RULES, ROW_RULES, SEQ_RULES, _case


def test_a_rule_has_a_name_iff_it_has_a_reason():
    for rules in (ROW_RULES, REF_RULES, SEQ_RULES):
        for cond, name, reason in rules:
            assert (name is None) == (reason is None), cond


def test_name_and_reason_cases_have_the_same_arms_in_the_same_order():
    for rules in (ROW_RULES, REF_RULES, SEQ_RULES):
        names, reasons = _case(rules, 1).splitlines(), _case(rules, 2).splitlines()
        assert [line.split(" THEN ")[0] for line in names] == [line.split(" THEN ")[0] for line in reasons]
        assert sum(" THEN NULL" in line for line in names) == sum(" THEN NULL" in line for line in reasons)

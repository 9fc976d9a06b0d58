from ecobench.evaluate import evaluate
from ecobench.reports.html import render
from ecobench.reports.tables import records
from ecobench.run import results_document
from ecobench.scenario import scenario_from_dict


def test_report_escapes_user_text(scenario_dict):
    scenario_dict["description"] = "<script>alert(1)</script>"
    s = scenario_from_dict(scenario_dict)
    html = render(results_document(s, records(evaluate(s)), "run"))
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "http" not in html.split("<body>")[0]  # no external resources in the head

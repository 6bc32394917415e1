"""One module (or package) per study; each exposes `reproduce(out, quick, scheduler, workers, progress) -> list[claim dict]`, the simulated ones through a `study.Study` (its runs, reduction, tables, figures and claims)."""

STUDIES = {
    "shared-link-arq": "thinwire.studies.shared_link_arq",
    "is707-idle-frames": "thinwire.studies.is707_idle_frames",
    "gsm-multilayer": "thinwire.studies.gsm_multilayer",
    "gprs-tcp": "thinwire.studies.gprs_tcp",
    "gprs-proxy": "thinwire.studies.gprs_proxy",
    "sim-vs-real": "thinwire.studies.sim_vs_real",
    "aqm-wireless": "thinwire.studies.aqm_wireless",
}


def replicates(name: str) -> bool:
    """Whether study `name` replicates its runs (takes `replications`)."""
    import importlib

    study = getattr(importlib.import_module(STUDIES[name]), "STUDY", None)
    return study is not None and study.replications is not None

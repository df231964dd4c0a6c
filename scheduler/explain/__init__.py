"""Why a pod is pending: :mod:`.core` asks the scheduler's own framework (and each Filter
plugin's optional explain hooks, ``scheduler.framework.explaining``) and assembles an
:class:`Explanation`; :mod:`.render` prints it for people and tools. The I/O around it, the
``secondary-scheduler explain`` / ``kubectl why`` commands and the HTTP endpoint, is the
operator's (``scheduler.operator.explain_cli``, ``scheduler.operator.explain_endpoint``).
"""

from scheduler.explain.core import (
    SKIPPED,
    ExplainError,
    Explanation,
    FilterVerdict,
    Listing,
    NodeReport,
    PreemptionCandidate,
    PreemptionPreview,
    Victim,
    choose_profile,
    explain,
    explain_in_loop,
    scheduler_from_listing,
)
from scheduler.explain.render import WIDTH, as_dict, from_dict, to_json, to_text

__all__ = [
    "SKIPPED",
    "WIDTH",
    "ExplainError",
    "Explanation",
    "FilterVerdict",
    "Listing",
    "NodeReport",
    "PreemptionCandidate",
    "PreemptionPreview",
    "Victim",
    "as_dict",
    "choose_profile",
    "explain",
    "explain_in_loop",
    "from_dict",
    "scheduler_from_listing",
    "to_json",
    "to_text",
]

"""What several plugins share, as upstream's ``framework/plugins/helper``: no plugin imports
another, they import this (and ``scheduler.plugin_api``); import-linter enforces both.

- :mod:`.row_memo`: values per node row kept between cycles over the node table's change log,
  the one way a plugin learns which rows changed;
- :mod:`.resource_allocation`: a pod's requests against the nodes' allocatable, and the
  ``resources`` lists of the NodeResources plugins' arguments, and the devices that stand
  for a DRA-backed extended resource;
- :mod:`.shape_score`: the broken-linear function shapes of scoring strategies;
- :mod:`.normalize_score`: upstream's ``DefaultNormalizeScore``;
- :mod:`.matched_pods`: the placed pods a selector matches, shared through the CycleState;
- :mod:`.volume_hints`: the queueing hint the volume plugins share;
- :mod:`.dra_nodes`: which nodes a ResourceSlice or a device is on.
"""

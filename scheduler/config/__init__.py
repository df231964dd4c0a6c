"""The component's configuration: the KubeSchedulerConfiguration file as a whole, with the
client connection, leader election, extenders and the rescheduler. The profiles and their
plugins are the framework's (:mod:`scheduler.framework.profile_config`)."""

from scheduler.config.component import (
    AVOID_BOUNCE_BACK,
    JITTER_FACTOR,
    OBJECTIVE_PLUGINS,
    PREFERRED_TERMS,
    UNDERUTILIZED_NODES,
    ClientConnection,
    ExtenderConfig,
    ExtenderTLS,
    LeaderElection,
    ReschedulerConfig,
    ReschedulerLimits,
)
from scheduler.config.scheduler_config import (
    SchedulerConfig,
    default_config,
    load_config_file,
    parse_config,
)

__all__ = [
    "AVOID_BOUNCE_BACK",
    "JITTER_FACTOR",
    "OBJECTIVE_PLUGINS",
    "PREFERRED_TERMS",
    "UNDERUTILIZED_NODES",
    "ClientConnection",
    "ExtenderConfig",
    "ExtenderTLS",
    "LeaderElection",
    "ReschedulerConfig",
    "ReschedulerLimits",
    "SchedulerConfig",
    "default_config",
    "load_config_file",
    "parse_config",
]

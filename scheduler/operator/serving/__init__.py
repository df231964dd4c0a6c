"""The secure port, served as kube-scheduler serves it: HTTPS, delegated authentication and
authorization (auth), a bounded server (server), upstream's flags (options)."""

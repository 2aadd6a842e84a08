"""The DCI conditions' shell: the per-episode staged folder and file tools (`files`, `episode`),
the command runner (`shell`) and the operating-system sandbox around it (`sandbox`; `launch`,
how each mechanism starts a command; `watchdog`, the limits; `jail`, `cgroup`, `safe`).
docs/security.md states the threat model.
"""

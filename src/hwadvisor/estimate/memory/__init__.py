"""Memory of a job on a device: the parts, their bounds, the fit, the fixes and multi-GPU plans."""

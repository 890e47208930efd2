"""Time of a job on a device: this CPU from its measured figures, catalog CPUs and GPUs, several GPUs."""

"""What the job is: options to a Workload, FLOPs counted on the meta device, a user model's memory counted."""

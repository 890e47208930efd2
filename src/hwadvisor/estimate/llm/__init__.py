"""Language models priced on one device: serving and fine-tuning, bridged to the physics in hwadvisor.llm."""

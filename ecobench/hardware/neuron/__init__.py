"""Emulated AWS Neuron hardware: NeuronCore engine timing and numerics."""

// Placeholder so the kernels library has a source until the kernels land.

// Copy and fill for the kernels, defined inside each target's namespace.
// std::copy_n / std::fill_n instantiations would be shared symbols across
// the per-ISA translation units of the xsimd backend (each compiled with its
// own -m flags), and the linker may keep an AVX-512 copy for every caller.
//
// Textual part of a per-target namespace: include only from a backend's
// instantiation file.

inline void CopyN(const float* from, size_t n, float* to) {
  for (size_t i = 0; i < n; ++i) to[i] = from[i];
}

inline void FillN(float* to, size_t n, float value) {
  for (size_t i = 0; i < n; ++i) to[i] = value;
}

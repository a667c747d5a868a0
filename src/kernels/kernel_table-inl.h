// Fills a KernelTable (and TrainingKernels) with this target's instantiations
// of the kernels.
//
// Textual part of a per-target namespace: include only from a backend's
// instantiation file, after gemm-inl.h, int8_gemm-inl.h, attention-inl.h,
// attention_backward-inl.h, rope-inl.h, elementwise-inl.h
// and optimizer-inl.h.

template <class Ops>
KernelTable MakeKernelTable(const char* name, Backend backend) {
  KernelTable t;
  t.name = name;
  t.backend = backend;
  t.lanes = Ops::kLanes;
  t.panel_width = Gemm<Ops>::kPanel;
  t.gemm_tile_rows = Gemm<Ops>::kRows;
  t.gemm_k_block = Gemm<Ops>::kPanelRows;
  t.pack_b = &Gemm<Ops>::PackB;
  t.gemm = &Gemm<Ops>::Multiply;
  // The training module holds no int8 weights (training_module.h): their
  // kernel is left out of it.
  t.int8_quantize = kTrainingModule ? nullptr : &Int8Gemm<Ops>::Quantize;
  t.attention_scratch_floats = &Attention<Ops>::ScratchFloats;
  t.attention = &Attention<Ops>::Run;
  t.rope = &Rope<Ops>::Rotate;
  t.activation = &Elementwise<Ops>::ApplyActivation;
  t.add = &Elementwise<Ops>::Add;
  t.layer_norm = &Elementwise<Ops>::LayerNorm;
  t.rms_norm = &Elementwise<Ops>::RmsNorm;
  t.gated_activation = &Elementwise<Ops>::GatedActivation;
  return t;
}

template <class Ops>
TrainingKernels MakeTrainingKernels() {
  TrainingKernels t;
  t.attention_backward_scratch_floats = &AttentionBackward<Ops>::ScratchFloats;
  t.attention_backward = &AttentionBackward<Ops>::Run;
  t.activation_backward = &Elementwise<Ops>::ActivationBackward;
  t.layer_norm_backward = &Elementwise<Ops>::LayerNormBackward;
  t.rms_norm_backward = &Elementwise<Ops>::RmsNormBackward;
  t.rope_backward = &Rope<Ops>::RotateBack;
  t.gated_activation_backward = &Elementwise<Ops>::GatedActivationBackward;
  t.sgd = &Optimizers<Ops>::Sgd;
  t.adam = &Optimizers<Ops>::Adam;
  return t;
}

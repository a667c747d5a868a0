# The training build (SA_WASM_TRAINING): simd_attention_training, the SIMD
# build with the backward passes, the optimizers (training_binding.cc), the
# tiny model (tiny_model_binding.cc), TransformerBlock and TransformerStack
# (block_binding.cc, without their KV caches) bound, loaded by
# createAttentionModule({ training: true }). It links simd_attention, the
# library with the training code (the inference modules link
# simd_attention_inference; see src/training/training_hooks.h). Highway only, as
# the threaded builds, for size, and without what only inference uses
# (src/training/training_module.h: SA_TRAINING_MODULE, set on the whole tree by the
# top CMakeLists.txt; the pool-only sources, bindings/CMakeLists.txt).
set_target_properties(sa_js_module PROPERTIES OUTPUT_NAME simd_attention_training)
target_sources(sa_js_module PRIVATE training_binding.cc tiny_model_binding.cc block_binding.cc)

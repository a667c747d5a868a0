// A prototype, outside the library, of what the wasm GEMM micro-kernel could
// reach on this host: the same packed-B layout (panels of 8 columns) and
// K blocking as kernels/gemm-inl.h, with an R x 2-vector tile written out
// by hand (row pointers, v128.load32_splat broadcasts), in two flavours:
// f32x4.mul + f32x4.add (wasm-simd128) and f32x4.relaxed_madd (relaxed
// SIMD: V8 emits vfmadd231ps). Generated once by a script; kept as
// evidence for the README's Speed section. Build and run:
//   bash bench/js/tools/wasm_tile_proto.sh
// (emcc 3.1.6's LLVM 14 encodes relaxed fma with the pre-standard opcode
// 0xfd 0xaf 0x01; the script rewrites it to the standard 0xfd 0x85 0x02,
// with the operands already in relaxed_madd's a * b + c order, and runs
// node with --experimental-wasm-relaxed-simd, which Node 20 needs.)
#include <wasm_simd128.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define KB 512
__attribute__((noinline)) void ma4(const float* a,int lda,int m,int k,const float* pb,int n,float* c,int ldc){
  for(int k0=0;k0<k;k0+=KB){int kc=k-k0<KB?k-k0:KB;
  for(int p=0;p*8<n;p++){const float* bp=pb+p*8*k+k0*8;
   for(int r0=0;r0+4<=m;r0+=4){ float* C=c+r0*ldc+p*8;
    const float* a0=a+(r0+0)*lda+k0;
    v128_t c00= k0? wasm_v128_load(C+0*ldc): wasm_f32x4_splat(0); v128_t c01= k0? wasm_v128_load(C+0*ldc+4): wasm_f32x4_splat(0);
    const float* a1=a+(r0+1)*lda+k0;
    v128_t c10= k0? wasm_v128_load(C+1*ldc): wasm_f32x4_splat(0); v128_t c11= k0? wasm_v128_load(C+1*ldc+4): wasm_f32x4_splat(0);
    const float* a2=a+(r0+2)*lda+k0;
    v128_t c20= k0? wasm_v128_load(C+2*ldc): wasm_f32x4_splat(0); v128_t c21= k0? wasm_v128_load(C+2*ldc+4): wasm_f32x4_splat(0);
    const float* a3=a+(r0+3)*lda+k0;
    v128_t c30= k0? wasm_v128_load(C+3*ldc): wasm_f32x4_splat(0); v128_t c31= k0? wasm_v128_load(C+3*ldc+4): wasm_f32x4_splat(0);
    const float* b=bp;
    for(int kk=0;kk<kc;kk++){ v128_t b0=wasm_v128_load(b), b1=wasm_v128_load(b+4); b+=8;
      { v128_t x=wasm_v128_load32_splat(a0+kk);
        c00=wasm_f32x4_add(c00,wasm_f32x4_mul(x,b0));
        c01=wasm_f32x4_add(c01,wasm_f32x4_mul(x,b1));
      }
      { v128_t x=wasm_v128_load32_splat(a1+kk);
        c10=wasm_f32x4_add(c10,wasm_f32x4_mul(x,b0));
        c11=wasm_f32x4_add(c11,wasm_f32x4_mul(x,b1));
      }
      { v128_t x=wasm_v128_load32_splat(a2+kk);
        c20=wasm_f32x4_add(c20,wasm_f32x4_mul(x,b0));
        c21=wasm_f32x4_add(c21,wasm_f32x4_mul(x,b1));
      }
      { v128_t x=wasm_v128_load32_splat(a3+kk);
        c30=wasm_f32x4_add(c30,wasm_f32x4_mul(x,b0));
        c31=wasm_f32x4_add(c31,wasm_f32x4_mul(x,b1));
      }
    }
    wasm_v128_store(C+0*ldc,c00); wasm_v128_store(C+0*ldc+4,c01);
    wasm_v128_store(C+1*ldc,c10); wasm_v128_store(C+1*ldc+4,c11);
    wasm_v128_store(C+2*ldc,c20); wasm_v128_store(C+2*ldc+4,c21);
    wasm_v128_store(C+3*ldc,c30); wasm_v128_store(C+3*ldc+4,c31);
  }}}}
#ifdef USE_FMA
__attribute__((noinline)) void fm4(const float* a,int lda,int m,int k,const float* pb,int n,float* c,int ldc){
  for(int k0=0;k0<k;k0+=KB){int kc=k-k0<KB?k-k0:KB;
  for(int p=0;p*8<n;p++){const float* bp=pb+p*8*k+k0*8;
   for(int r0=0;r0+4<=m;r0+=4){ float* C=c+r0*ldc+p*8;
    const float* a0=a+(r0+0)*lda+k0;
    v128_t c00= k0? wasm_v128_load(C+0*ldc): wasm_f32x4_splat(0); v128_t c01= k0? wasm_v128_load(C+0*ldc+4): wasm_f32x4_splat(0);
    const float* a1=a+(r0+1)*lda+k0;
    v128_t c10= k0? wasm_v128_load(C+1*ldc): wasm_f32x4_splat(0); v128_t c11= k0? wasm_v128_load(C+1*ldc+4): wasm_f32x4_splat(0);
    const float* a2=a+(r0+2)*lda+k0;
    v128_t c20= k0? wasm_v128_load(C+2*ldc): wasm_f32x4_splat(0); v128_t c21= k0? wasm_v128_load(C+2*ldc+4): wasm_f32x4_splat(0);
    const float* a3=a+(r0+3)*lda+k0;
    v128_t c30= k0? wasm_v128_load(C+3*ldc): wasm_f32x4_splat(0); v128_t c31= k0? wasm_v128_load(C+3*ldc+4): wasm_f32x4_splat(0);
    const float* b=bp;
    for(int kk=0;kk<kc;kk++){ v128_t b0=wasm_v128_load(b), b1=wasm_v128_load(b+4); b+=8;
      { v128_t x=wasm_v128_load32_splat(a0+kk);
        c00=__builtin_wasm_fma_f32x4(x,b0,c00);
        c01=__builtin_wasm_fma_f32x4(x,b1,c01);
      }
      { v128_t x=wasm_v128_load32_splat(a1+kk);
        c10=__builtin_wasm_fma_f32x4(x,b0,c10);
        c11=__builtin_wasm_fma_f32x4(x,b1,c11);
      }
      { v128_t x=wasm_v128_load32_splat(a2+kk);
        c20=__builtin_wasm_fma_f32x4(x,b0,c20);
        c21=__builtin_wasm_fma_f32x4(x,b1,c21);
      }
      { v128_t x=wasm_v128_load32_splat(a3+kk);
        c30=__builtin_wasm_fma_f32x4(x,b0,c30);
        c31=__builtin_wasm_fma_f32x4(x,b1,c31);
      }
    }
    wasm_v128_store(C+0*ldc,c00); wasm_v128_store(C+0*ldc+4,c01);
    wasm_v128_store(C+1*ldc,c10); wasm_v128_store(C+1*ldc+4,c11);
    wasm_v128_store(C+2*ldc,c20); wasm_v128_store(C+2*ldc+4,c21);
    wasm_v128_store(C+3*ldc,c30); wasm_v128_store(C+3*ldc+4,c31);
  }}}}
#endif
__attribute__((noinline)) void ma5(const float* a,int lda,int m,int k,const float* pb,int n,float* c,int ldc){
  for(int k0=0;k0<k;k0+=KB){int kc=k-k0<KB?k-k0:KB;
  for(int p=0;p*8<n;p++){const float* bp=pb+p*8*k+k0*8;
   for(int r0=0;r0+5<=m;r0+=5){ float* C=c+r0*ldc+p*8;
    const float* a0=a+(r0+0)*lda+k0;
    v128_t c00= k0? wasm_v128_load(C+0*ldc): wasm_f32x4_splat(0); v128_t c01= k0? wasm_v128_load(C+0*ldc+4): wasm_f32x4_splat(0);
    const float* a1=a+(r0+1)*lda+k0;
    v128_t c10= k0? wasm_v128_load(C+1*ldc): wasm_f32x4_splat(0); v128_t c11= k0? wasm_v128_load(C+1*ldc+4): wasm_f32x4_splat(0);
    const float* a2=a+(r0+2)*lda+k0;
    v128_t c20= k0? wasm_v128_load(C+2*ldc): wasm_f32x4_splat(0); v128_t c21= k0? wasm_v128_load(C+2*ldc+4): wasm_f32x4_splat(0);
    const float* a3=a+(r0+3)*lda+k0;
    v128_t c30= k0? wasm_v128_load(C+3*ldc): wasm_f32x4_splat(0); v128_t c31= k0? wasm_v128_load(C+3*ldc+4): wasm_f32x4_splat(0);
    const float* a4=a+(r0+4)*lda+k0;
    v128_t c40= k0? wasm_v128_load(C+4*ldc): wasm_f32x4_splat(0); v128_t c41= k0? wasm_v128_load(C+4*ldc+4): wasm_f32x4_splat(0);
    const float* b=bp;
    for(int kk=0;kk<kc;kk++){ v128_t b0=wasm_v128_load(b), b1=wasm_v128_load(b+4); b+=8;
      { v128_t x=wasm_v128_load32_splat(a0+kk);
        c00=wasm_f32x4_add(c00,wasm_f32x4_mul(x,b0));
        c01=wasm_f32x4_add(c01,wasm_f32x4_mul(x,b1));
      }
      { v128_t x=wasm_v128_load32_splat(a1+kk);
        c10=wasm_f32x4_add(c10,wasm_f32x4_mul(x,b0));
        c11=wasm_f32x4_add(c11,wasm_f32x4_mul(x,b1));
      }
      { v128_t x=wasm_v128_load32_splat(a2+kk);
        c20=wasm_f32x4_add(c20,wasm_f32x4_mul(x,b0));
        c21=wasm_f32x4_add(c21,wasm_f32x4_mul(x,b1));
      }
      { v128_t x=wasm_v128_load32_splat(a3+kk);
        c30=wasm_f32x4_add(c30,wasm_f32x4_mul(x,b0));
        c31=wasm_f32x4_add(c31,wasm_f32x4_mul(x,b1));
      }
      { v128_t x=wasm_v128_load32_splat(a4+kk);
        c40=wasm_f32x4_add(c40,wasm_f32x4_mul(x,b0));
        c41=wasm_f32x4_add(c41,wasm_f32x4_mul(x,b1));
      }
    }
    wasm_v128_store(C+0*ldc,c00); wasm_v128_store(C+0*ldc+4,c01);
    wasm_v128_store(C+1*ldc,c10); wasm_v128_store(C+1*ldc+4,c11);
    wasm_v128_store(C+2*ldc,c20); wasm_v128_store(C+2*ldc+4,c21);
    wasm_v128_store(C+3*ldc,c30); wasm_v128_store(C+3*ldc+4,c31);
    wasm_v128_store(C+4*ldc,c40); wasm_v128_store(C+4*ldc+4,c41);
  }}}}
#ifdef USE_FMA
__attribute__((noinline)) void fm5(const float* a,int lda,int m,int k,const float* pb,int n,float* c,int ldc){
  for(int k0=0;k0<k;k0+=KB){int kc=k-k0<KB?k-k0:KB;
  for(int p=0;p*8<n;p++){const float* bp=pb+p*8*k+k0*8;
   for(int r0=0;r0+5<=m;r0+=5){ float* C=c+r0*ldc+p*8;
    const float* a0=a+(r0+0)*lda+k0;
    v128_t c00= k0? wasm_v128_load(C+0*ldc): wasm_f32x4_splat(0); v128_t c01= k0? wasm_v128_load(C+0*ldc+4): wasm_f32x4_splat(0);
    const float* a1=a+(r0+1)*lda+k0;
    v128_t c10= k0? wasm_v128_load(C+1*ldc): wasm_f32x4_splat(0); v128_t c11= k0? wasm_v128_load(C+1*ldc+4): wasm_f32x4_splat(0);
    const float* a2=a+(r0+2)*lda+k0;
    v128_t c20= k0? wasm_v128_load(C+2*ldc): wasm_f32x4_splat(0); v128_t c21= k0? wasm_v128_load(C+2*ldc+4): wasm_f32x4_splat(0);
    const float* a3=a+(r0+3)*lda+k0;
    v128_t c30= k0? wasm_v128_load(C+3*ldc): wasm_f32x4_splat(0); v128_t c31= k0? wasm_v128_load(C+3*ldc+4): wasm_f32x4_splat(0);
    const float* a4=a+(r0+4)*lda+k0;
    v128_t c40= k0? wasm_v128_load(C+4*ldc): wasm_f32x4_splat(0); v128_t c41= k0? wasm_v128_load(C+4*ldc+4): wasm_f32x4_splat(0);
    const float* b=bp;
    for(int kk=0;kk<kc;kk++){ v128_t b0=wasm_v128_load(b), b1=wasm_v128_load(b+4); b+=8;
      { v128_t x=wasm_v128_load32_splat(a0+kk);
        c00=__builtin_wasm_fma_f32x4(x,b0,c00);
        c01=__builtin_wasm_fma_f32x4(x,b1,c01);
      }
      { v128_t x=wasm_v128_load32_splat(a1+kk);
        c10=__builtin_wasm_fma_f32x4(x,b0,c10);
        c11=__builtin_wasm_fma_f32x4(x,b1,c11);
      }
      { v128_t x=wasm_v128_load32_splat(a2+kk);
        c20=__builtin_wasm_fma_f32x4(x,b0,c20);
        c21=__builtin_wasm_fma_f32x4(x,b1,c21);
      }
      { v128_t x=wasm_v128_load32_splat(a3+kk);
        c30=__builtin_wasm_fma_f32x4(x,b0,c30);
        c31=__builtin_wasm_fma_f32x4(x,b1,c31);
      }
      { v128_t x=wasm_v128_load32_splat(a4+kk);
        c40=__builtin_wasm_fma_f32x4(x,b0,c40);
        c41=__builtin_wasm_fma_f32x4(x,b1,c41);
      }
    }
    wasm_v128_store(C+0*ldc,c00); wasm_v128_store(C+0*ldc+4,c01);
    wasm_v128_store(C+1*ldc,c10); wasm_v128_store(C+1*ldc+4,c11);
    wasm_v128_store(C+2*ldc,c20); wasm_v128_store(C+2*ldc+4,c21);
    wasm_v128_store(C+3*ldc,c30); wasm_v128_store(C+3*ldc+4,c31);
    wasm_v128_store(C+4*ldc,c40); wasm_v128_store(C+4*ldc+4,c41);
  }}}}
#endif
__attribute__((noinline)) void ma6(const float* a,int lda,int m,int k,const float* pb,int n,float* c,int ldc){
  for(int k0=0;k0<k;k0+=KB){int kc=k-k0<KB?k-k0:KB;
  for(int p=0;p*8<n;p++){const float* bp=pb+p*8*k+k0*8;
   for(int r0=0;r0+6<=m;r0+=6){ float* C=c+r0*ldc+p*8;
    const float* a0=a+(r0+0)*lda+k0;
    v128_t c00= k0? wasm_v128_load(C+0*ldc): wasm_f32x4_splat(0); v128_t c01= k0? wasm_v128_load(C+0*ldc+4): wasm_f32x4_splat(0);
    const float* a1=a+(r0+1)*lda+k0;
    v128_t c10= k0? wasm_v128_load(C+1*ldc): wasm_f32x4_splat(0); v128_t c11= k0? wasm_v128_load(C+1*ldc+4): wasm_f32x4_splat(0);
    const float* a2=a+(r0+2)*lda+k0;
    v128_t c20= k0? wasm_v128_load(C+2*ldc): wasm_f32x4_splat(0); v128_t c21= k0? wasm_v128_load(C+2*ldc+4): wasm_f32x4_splat(0);
    const float* a3=a+(r0+3)*lda+k0;
    v128_t c30= k0? wasm_v128_load(C+3*ldc): wasm_f32x4_splat(0); v128_t c31= k0? wasm_v128_load(C+3*ldc+4): wasm_f32x4_splat(0);
    const float* a4=a+(r0+4)*lda+k0;
    v128_t c40= k0? wasm_v128_load(C+4*ldc): wasm_f32x4_splat(0); v128_t c41= k0? wasm_v128_load(C+4*ldc+4): wasm_f32x4_splat(0);
    const float* a5=a+(r0+5)*lda+k0;
    v128_t c50= k0? wasm_v128_load(C+5*ldc): wasm_f32x4_splat(0); v128_t c51= k0? wasm_v128_load(C+5*ldc+4): wasm_f32x4_splat(0);
    const float* b=bp;
    for(int kk=0;kk<kc;kk++){ v128_t b0=wasm_v128_load(b), b1=wasm_v128_load(b+4); b+=8;
      { v128_t x=wasm_v128_load32_splat(a0+kk);
        c00=wasm_f32x4_add(c00,wasm_f32x4_mul(x,b0));
        c01=wasm_f32x4_add(c01,wasm_f32x4_mul(x,b1));
      }
      { v128_t x=wasm_v128_load32_splat(a1+kk);
        c10=wasm_f32x4_add(c10,wasm_f32x4_mul(x,b0));
        c11=wasm_f32x4_add(c11,wasm_f32x4_mul(x,b1));
      }
      { v128_t x=wasm_v128_load32_splat(a2+kk);
        c20=wasm_f32x4_add(c20,wasm_f32x4_mul(x,b0));
        c21=wasm_f32x4_add(c21,wasm_f32x4_mul(x,b1));
      }
      { v128_t x=wasm_v128_load32_splat(a3+kk);
        c30=wasm_f32x4_add(c30,wasm_f32x4_mul(x,b0));
        c31=wasm_f32x4_add(c31,wasm_f32x4_mul(x,b1));
      }
      { v128_t x=wasm_v128_load32_splat(a4+kk);
        c40=wasm_f32x4_add(c40,wasm_f32x4_mul(x,b0));
        c41=wasm_f32x4_add(c41,wasm_f32x4_mul(x,b1));
      }
      { v128_t x=wasm_v128_load32_splat(a5+kk);
        c50=wasm_f32x4_add(c50,wasm_f32x4_mul(x,b0));
        c51=wasm_f32x4_add(c51,wasm_f32x4_mul(x,b1));
      }
    }
    wasm_v128_store(C+0*ldc,c00); wasm_v128_store(C+0*ldc+4,c01);
    wasm_v128_store(C+1*ldc,c10); wasm_v128_store(C+1*ldc+4,c11);
    wasm_v128_store(C+2*ldc,c20); wasm_v128_store(C+2*ldc+4,c21);
    wasm_v128_store(C+3*ldc,c30); wasm_v128_store(C+3*ldc+4,c31);
    wasm_v128_store(C+4*ldc,c40); wasm_v128_store(C+4*ldc+4,c41);
    wasm_v128_store(C+5*ldc,c50); wasm_v128_store(C+5*ldc+4,c51);
  }}}}
#ifdef USE_FMA
__attribute__((noinline)) void fm6(const float* a,int lda,int m,int k,const float* pb,int n,float* c,int ldc){
  for(int k0=0;k0<k;k0+=KB){int kc=k-k0<KB?k-k0:KB;
  for(int p=0;p*8<n;p++){const float* bp=pb+p*8*k+k0*8;
   for(int r0=0;r0+6<=m;r0+=6){ float* C=c+r0*ldc+p*8;
    const float* a0=a+(r0+0)*lda+k0;
    v128_t c00= k0? wasm_v128_load(C+0*ldc): wasm_f32x4_splat(0); v128_t c01= k0? wasm_v128_load(C+0*ldc+4): wasm_f32x4_splat(0);
    const float* a1=a+(r0+1)*lda+k0;
    v128_t c10= k0? wasm_v128_load(C+1*ldc): wasm_f32x4_splat(0); v128_t c11= k0? wasm_v128_load(C+1*ldc+4): wasm_f32x4_splat(0);
    const float* a2=a+(r0+2)*lda+k0;
    v128_t c20= k0? wasm_v128_load(C+2*ldc): wasm_f32x4_splat(0); v128_t c21= k0? wasm_v128_load(C+2*ldc+4): wasm_f32x4_splat(0);
    const float* a3=a+(r0+3)*lda+k0;
    v128_t c30= k0? wasm_v128_load(C+3*ldc): wasm_f32x4_splat(0); v128_t c31= k0? wasm_v128_load(C+3*ldc+4): wasm_f32x4_splat(0);
    const float* a4=a+(r0+4)*lda+k0;
    v128_t c40= k0? wasm_v128_load(C+4*ldc): wasm_f32x4_splat(0); v128_t c41= k0? wasm_v128_load(C+4*ldc+4): wasm_f32x4_splat(0);
    const float* a5=a+(r0+5)*lda+k0;
    v128_t c50= k0? wasm_v128_load(C+5*ldc): wasm_f32x4_splat(0); v128_t c51= k0? wasm_v128_load(C+5*ldc+4): wasm_f32x4_splat(0);
    const float* b=bp;
    for(int kk=0;kk<kc;kk++){ v128_t b0=wasm_v128_load(b), b1=wasm_v128_load(b+4); b+=8;
      { v128_t x=wasm_v128_load32_splat(a0+kk);
        c00=__builtin_wasm_fma_f32x4(x,b0,c00);
        c01=__builtin_wasm_fma_f32x4(x,b1,c01);
      }
      { v128_t x=wasm_v128_load32_splat(a1+kk);
        c10=__builtin_wasm_fma_f32x4(x,b0,c10);
        c11=__builtin_wasm_fma_f32x4(x,b1,c11);
      }
      { v128_t x=wasm_v128_load32_splat(a2+kk);
        c20=__builtin_wasm_fma_f32x4(x,b0,c20);
        c21=__builtin_wasm_fma_f32x4(x,b1,c21);
      }
      { v128_t x=wasm_v128_load32_splat(a3+kk);
        c30=__builtin_wasm_fma_f32x4(x,b0,c30);
        c31=__builtin_wasm_fma_f32x4(x,b1,c31);
      }
      { v128_t x=wasm_v128_load32_splat(a4+kk);
        c40=__builtin_wasm_fma_f32x4(x,b0,c40);
        c41=__builtin_wasm_fma_f32x4(x,b1,c41);
      }
      { v128_t x=wasm_v128_load32_splat(a5+kk);
        c50=__builtin_wasm_fma_f32x4(x,b0,c50);
        c51=__builtin_wasm_fma_f32x4(x,b1,c51);
      }
    }
    wasm_v128_store(C+0*ldc,c00); wasm_v128_store(C+0*ldc+4,c01);
    wasm_v128_store(C+1*ldc,c10); wasm_v128_store(C+1*ldc+4,c11);
    wasm_v128_store(C+2*ldc,c20); wasm_v128_store(C+2*ldc+4,c21);
    wasm_v128_store(C+3*ldc,c30); wasm_v128_store(C+3*ldc+4,c31);
    wasm_v128_store(C+4*ldc,c40); wasm_v128_store(C+4*ldc+4,c41);
    wasm_v128_store(C+5*ldc,c50); wasm_v128_store(C+5*ldc+4,c51);
  }}}}
#endif

typedef void (*K)(const float*,int,int,int,const float*,int,float*,int);
int main(){int m=120,k=768,n=768; float*a=malloc(4*m*k),*pb=malloc(4*k*n),*c=malloc(4*m*n),*r=malloc(4*m*n);
 for(int i=0;i<m*k;i++)a[i]=(i%13)*0.01f; for(int i=0;i<k*n;i++)pb[i]=(i%7)*0.01f;
#ifdef USE_FMA
 K ks[6]={ma4,ma5,ma6,fm4,fm5,fm6}; const char* nm[6]={"mul+add 4x2","mul+add 5x2","mul+add 6x2","FMA 4x2","FMA 5x2","FMA 6x2"}; int nk=6;
#else
 K ks[3]={ma4,ma5,ma6}; const char* nm[3]={"mul+add 4x2","mul+add 5x2","mul+add 6x2"}; int nk=3;
#endif
 ma4(a,k,m,k,pb,n,r,n);
 double fl=2.0*m*n*k; double best[6]={0};
 for(int w=0;w<nk;w++){ks[w](a,k,m,k,pb,n,c,n); double md=0; for(int i=0;i<m*n;i++){double d=c[i]-r[i]; if(d<0)d=-d; if(d>md)md=d;} if(md>1e-3) printf("%s WRONG %g\n",nm[w],md);}
 for(int round=0;round<6;round++) for(int w=0;w<nk;w++){ double t0=now(); int it=0; do{ ks[w](a,k,m,k,pb,n,c,n); it++;}while(now()-t0<0.1);
   double g=fl*it/(now()-t0)/1e9; if(g>best[w])best[w]=g;}
 for(int w=0;w<nk;w++) printf("%s %.1f  ",nm[w],best[w]); printf("GFLOP/s\n");
}

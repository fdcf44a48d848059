// Throwaway probe kept for reproducibility (docs/PERFORMANCE.md, "Pipelining the one-shot in
// pieces"); not built. Two threads, one per vCPU, exchange N bytes per iteration like the
// one-shot: write own slot, publish, wait for the peer, out = mine + peer's.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <pthread.h>
#include <immintrin.h>
struct alignas(64) Flag { std::atomic<uint64_t> v{0}; char pad[56]; };
constexpr int kMaxPieces = 64;
struct Area { Flag f[2][kMaxPieces]; alignas(64) float slot[2][2][8192]; };
Area* A;
size_t N; int pieces; int iters; int mode;
double res[2];
void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
void run(int me){
  pin(me);
  int peer=1-me; size_t n=N/4; size_t per=n/pieces;
  std::vector<float> in(n,1.0f), out(n);
  auto t0=std::chrono::steady_clock::now();
  for(int it=1; it<=iters; ++it){
    float* mine=A->slot[me][it&1]; float* theirs=A->slot[peer][it&1];
    if(mode==0){
      memcpy(mine,in.data(),N);
      A->f[me][0].v.store(it,std::memory_order_release);
      while(A->f[peer][0].v.load(std::memory_order_acquire)<(uint64_t)it) _mm_pause();
      for(size_t i=0;i<n;++i) out[i]= me==0? in[i]+theirs[i] : theirs[i]+in[i];
    } else {
      // pipelined: write piece k, publish, then reduce piece k-1 of peer
      for(int k=0;k<=pieces;++k){
        if(k<pieces){ memcpy(mine+k*per,in.data()+k*per,per*4); A->f[me][k].v.store(it,std::memory_order_release);}        
        if(k>0){ int j=k-1; while(A->f[peer][j].v.load(std::memory_order_acquire)<(uint64_t)it) _mm_pause();
          for(size_t i=j*per;i<(j+1)*per;++i) out[i]= me==0? in[i]+theirs[i] : theirs[i]+in[i]; }
      }
    }
  }
  auto t1=std::chrono::steady_clock::now();
  res[me]=std::chrono::duration<double,std::micro>(t1-t0).count()/iters;
  if(out[0]!=2.0f) abort();
}
int main(int c,char**v){N=atoi(v[1]);mode=atoi(v[2]);pieces=mode?atoi(v[3]):1;iters=200000;
  A=(Area*)aligned_alloc(4096,sizeof(Area)); memset((void*)A,0,sizeof(Area));
  std::thread t(run,1); run(0); t.join();
  printf("N=%zu mode=%d pieces=%d %.3f us\n",N,mode,pieces,res[0]);}

#include <pthread.h>
#include <sched.h>
#include <immintrin.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
using Clock = std::chrono::steady_clock;
static double secs(Clock::time_point t0){return std::chrono::duration<double>(Clock::now()-t0).count();}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
static double med(std::vector<double> v){std::sort(v.begin(),v.end());return v[v.size()/2];}
__attribute__((target("avx2,clflushopt"))) static void flush(char* p,size_t n){for(size_t k=0;k<n;k+=64)_mm_clflushopt(p+k);_mm_sfence();}
__attribute__((target("avx2"))) static void read_nta(char* dst,const char* src,size_t n){
  for(size_t k=0;k<n;k+=64){_mm_prefetch(src+k+1024,_MM_HINT_NTA);
    __m256i a=_mm256_loadu_si256((const __m256i*)(src+k)),b=_mm256_loadu_si256((const __m256i*)(src+k+32));
    _mm256_storeu_si256((__m256i*)(dst+k),a);_mm256_storeu_si256((__m256i*)(dst+k+32),b);}}
static void stream_copy(char* d,const char* s,size_t n){for(size_t k=0;k<n;k+=16)_mm_stream_si128((__m128i*)(d+k),_mm_loadu_si128((const __m128i*)(s+k)));_mm_sfence();}
int main(int argc,char**argv){
  size_t bytes=(argc>1?atoi(argv[1]):256)<<10; int mode=argc>2?atoi(argv[2]):0;
  char* sh=(char*)aligned_alloc(4096,bytes);char* as=(char*)aligned_alloc(4096,bytes);char* bd=(char*)aligned_alloc(4096,bytes);
  memset(sh,1,bytes);memset(as,2,bytes);memset(bd,3,bytes);
  const int R=201; std::atomic<int> turn{0}; std::vector<double> rd,fl,wr;
  std::thread b([&]{pin(1);for(int k=0;k<R;k++){while(turn.load(std::memory_order_acquire)!=2*k+1){}
    auto t0=Clock::now(); if(mode==2) read_nta(bd,sh,bytes); else memcpy(bd,sh,bytes); rd.push_back(bytes/secs(t0)/1e9);
    if(mode==1){auto t1=Clock::now();flush(sh,bytes);fl.push_back(bytes/secs(t1)/1e9);}
    turn.store(2*k+2,std::memory_order_release);}});
  pin(0);
  for(int k=0;k<R;k++){while(turn.load(std::memory_order_acquire)!=2*k){}
    auto t0=Clock::now(); if(mode==3) stream_copy(sh,as,bytes); else memcpy(sh,as,bytes); if(k)wr.push_back(bytes/secs(t0)/1e9);
    turn.store(2*k+1,std::memory_order_release);}
  b.join();
  printf("mode %d %zu KiB: read %.1f GB/s, flush %.1f, rewrite %.1f\n",mode,bytes>>10,med(rd),fl.empty()?0:med(fl),med(wr));
}

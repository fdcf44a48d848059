#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static double work(int cpu){cpu_set_t s;CPU_ZERO(&s);CPU_SET(cpu,&s);sched_setaffinity(0,sizeof s,&s);
 volatile unsigned long sink; unsigned long a=1,b=2,c=3,d=4; double t0=now();
 for(long i=0;i<400000000;i++){a=a*3+1;b=b*5+1;c=c*7+1;d=d*9+1;}
 sink=a+b+c+d; return now()-t0;}
int main(){ printf("alone cpu0 %.3f s\n",work(0)); printf("alone cpu1 %.3f s\n",work(1));
 int fd[2]; pipe(fd); pid_t p=fork(); if(p==0){double t=work(1); write(fd[1],&t,sizeof t); _exit(0);} 
 double t=work(0), t1; read(fd[0],&t1,sizeof t1); waitpid(p,0,0); printf("both: cpu0 %.3f s cpu1 %.3f s\n",t,t1); }

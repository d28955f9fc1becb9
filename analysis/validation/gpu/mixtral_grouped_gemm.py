# Mixtral-shaped expert GEMMs: grouped (torch._grouped_mm), batched (torch.bmm) and one dense GEMM of the same FLOPs, bf16.
# Run on a GPU machine: OUT=dir python3 mixtral_grouped_gemm.py (writes OUT/g.json; results: mixtral_grouped_gemm_{h200,h100}.csv).
import json,os,torch
def T(f):
 for _ in range(5):f()
 torch.cuda.synchronize();s=[]
 for _ in range(20):
  a=torch.cuda.Event(enable_timing=True);b=torch.cuda.Event(enable_timing=True);a.record();f();b.record();torch.cuda.synchronize();s.append(a.elapsed_time(b))
 s.sort();return s[10]*1e-3
print(torch.__version__,torch.cuda.get_device_name(0),hasattr(torch,"_grouped_mm"))
R=[];E=8
for nm,h,fe in[("8x7B",4096,14336),("8x22B",6144,16384)]:
 for tp in(1,4,8):
  f=fe//tp
  for t in(256,1024,4096,8192):
   m=t*2//E
   for n,k,g in((2*f,h,"up"),(h,f,"down")):
    x=torch.randn(E*m,k,device="cuda",dtype=torch.bfloat16);w=torch.randn(E,k,n,device="cuda",dtype=torch.bfloat16);w0=w[0];xb=x.view(E,m,k)
    r=dict(model=nm,tp=tp,tokens=t,m=m,n=n,k=k,gemm=g,dense=T(lambda:x@w0),bmm=T(lambda:torch.bmm(xb,w)))
    if hasattr(torch,"_grouped_mm"):
     o=torch.arange(m,E*m+1,m,device="cuda",dtype=torch.int32);wt=w.transpose(-2,-1).contiguous().transpose(-2,-1)
     try:r["grouped"]=T(lambda:torch._grouped_mm(x,wt,offs=o))
     except Exception as e:r["err"]=repr(e)[:150]
    R.append(r);print(json.dumps(r))
json.dump(R,open(os.environ["OUT"]+"/g.json","w"))

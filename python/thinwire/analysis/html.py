"""The interactive viewer: one standalone HTML file (script and data inlined, works
offline) drawing MultiTracer series on a canvas. Wheel zooms (shift: x only, alt:
y only), dragging pans, shift-drag zooms to a box, double-click resets, hovering
shows the nearest point, the legend toggles layers. Points that fall on the same
pixel are drawn once, so a million points stay smooth.

Data are embedded as base64 little-endian float64 arrays (x sorted per series).
"""

from __future__ import annotations

import base64
import html as _html
import json
from pathlib import Path

import numpy as np

from .series import COLORS, Series

_JS = r"""
window.addEventListener('error',e=>{const b=document.getElementById('tw-errors');b.style.display='block';b.textContent+='viewer error: '+e.message+'\n';});
(function(){
const D = JSON.parse(document.getElementById('tw-data').textContent);
function dec(b64){const s=atob(b64);const u=new Uint8Array(s.length);for(let i=0;i<s.length;i++)u[i]=s.charCodeAt(i);return new Float64Array(u.buffer);}
const S = D.series.map(s=>({name:s.name,style:s.style,color:s.color,unit:s.unit,x:dec(s.x),y:dec(s.y),on:true}));
const cv=document.getElementById('tw-canvas'), ctx=cv.getContext('2d'), tip=document.getElementById('tw-tip');
const M={l:78,r:15,t:30,b:45};
let full=null, view=null, drag=null, hover=null;
function bounds(){let x0=Infinity,x1=-Infinity,y0=Infinity,y1=-Infinity;
 for(const s of S){if(!s.on)continue;for(let i=0;i<s.x.length;i++){const x=s.x[i],y=s.y[i];if(!isFinite(x)||!isFinite(y))continue;if(x<x0)x0=x;if(x>x1)x1=x;if(y<y0)y0=y;if(y>y1)y1=y;}}
 if(!isFinite(x0)){x0=0;x1=1;y0=0;y1=1;} if(x1==x0)x1=x0+1; if(y1==y0)y1=y0+1;
 const dy=(y1-y0)*0.03,dx=(x1-x0)*0.01; return {x0:x0-dx,x1:x1+dx,y0:y0-dy,y1:y1+dy};}
function size(){const r=window.devicePixelRatio||1;cv.width=cv.clientWidth*r;cv.height=cv.clientHeight*r;ctx.setTransform(r,0,0,r,0,0);}
function W(){return cv.clientWidth-M.l-M.r;} function H(){return cv.clientHeight-M.t-M.b;}
function px(x){return M.l+(x-view.x0)/(view.x1-view.x0)*W();} function py(y){return M.t+(1-(y-view.y0)/(view.y1-view.y0))*H();}
function ticks(a,b,n){const st=Math.pow(10,Math.floor(Math.log10((b-a)/n)));const m=[1,2,5,10].find(k=>(b-a)/(st*k)<=n)||10;const s=st*m;const out=[];for(let v=Math.ceil(a/s)*s;v<=b;v+=s)out.push(v);return out;}
function trim(t){return t.indexOf('.')>=0?t.replace(/0+$/,'').replace(/\.$/,''):t;}
function fmt(v){const a=Math.abs(v);if(v===0)return '0';if(a>=1e6)return trim((v/1e6).toFixed(2))+'M';if(a>=1e4)return trim((v/1e3).toFixed(1))+'k';if(a>=100)return v.toFixed(0);if(a>=1)return trim(v.toFixed(2));const t=v.toPrecision(3);return t.indexOf('e')>=0?t:trim(t);}
function lo(a,v){let l=0,h=a.length;while(l<h){const m=(l+h)>>1;if(a[m]<v)l=m+1;else h=m;}return l;}
// Dense series (more points in view than RASTER) are drawn straight into pixels:
// points set their pixels, lines and steps fill each pixel column from its lowest
// to its highest value (joined to the previous column), then the layer is blended
// onto the canvas. This is linear in the points with a few operations each.
const RASTER=20000;
let layer=null;
function raster(s,i0,i1){
 const r=window.devicePixelRatio||1, w=Math.max(1,Math.round(W()*r)), h=Math.max(1,Math.round(H()*r));
 if(!layer||layer.width!==w||layer.height!==h){layer=document.createElement('canvas');layer.width=w;layer.height=h;}
 const lc=layer.getContext('2d'), img=lc.createImageData(w,h), buf=new Uint32Array(img.data.buffer);
 const c=parseInt(s.color.slice(1),16), col=(0xff<<24)|((c&0xff)<<16)|(c&0xff00)|((c>>16)&0xff);
 const sx=w/(view.x1-view.x0), sy=h/(view.y1-view.y0), x0=view.x0, y1=view.y1;
 if(s.style==='points'){
  for(let i=i0;i<i1;i++){const X=((s.x[i]-x0)*sx)|0, Y=((y1-s.y[i])*sy)|0;
   if(X<0||X>=w-1||Y<0||Y>=h-1)continue; const k=Y*w+X; buf[k]=col;buf[k+1]=col;buf[k+w]=col;buf[k+w+1]=col;}
 } else {
  const lo_=new Int32Array(w).fill(2147483647), hi_=new Int32Array(w).fill(-2147483648);
  let px_=-1,py_=0;
  for(let i=i0;i<i1;i++){const v=s.y[i]; if(!isFinite(v))continue; let X=((s.x[i]-x0)*sx)|0, Y=((y1-v)*sy)|0;
   if(Y<0)Y=0; if(Y>=h)Y=h-1; if(X>=w)break;
   if(px_>=0){ for(let x=Math.max(px_,0);x<Math.min(X,w);x++){ if(py_<lo_[x])lo_[x]=py_; if(py_>hi_[x])hi_[x]=py_; } }
   if(X>=0){ const a=s.style==='step'?py_:Y; for(const q of (px_>=0?[a,Y]:[Y])){ if(q<lo_[X])lo_[X]=q; if(q>hi_[X])hi_[X]=q; } }
   px_=X;py_=Y;}
  for(let x=0;x<w;x++){ if(hi_[x]<lo_[x])continue; for(let y=lo_[x];y<=hi_[x];y++)buf[y*w+x]=col; }
 }
 lc.putImageData(img,0,0);
 ctx.drawImage(layer,M.l,M.t,W(),H());
}
function draw(){
 const t0=performance.now();
 ctx.clearRect(0,0,cv.clientWidth,cv.clientHeight);ctx.font='11px sans-serif';ctx.fillStyle='#000';
 ctx.strokeStyle='#ddd';ctx.lineWidth=1;
 for(const v of ticks(view.x0,view.x1,8)){const X=px(v);ctx.beginPath();ctx.moveTo(X,M.t);ctx.lineTo(X,M.t+H());ctx.stroke();ctx.fillText(fmt(v),X-10,M.t+H()+14);}
 ctx.textAlign='right';const yt=[];for(const v of ticks(view.y0,view.y1,6)){const Y=py(v);ctx.beginPath();ctx.moveTo(M.l,Y);ctx.lineTo(M.l+W(),Y);ctx.stroke();ctx.fillText(fmt(v),M.l-4,Y+4);yt.push(v+'='+fmt(v));}ctx.textAlign='left';document.getElementById('tw-status').dataset.yticks=yt.join('|');
 ctx.fillText(D.xlabel,M.l+W()/2-20,M.t+H()+32);ctx.save();ctx.translate(12,M.t+H()/2+40);ctx.rotate(-Math.PI/2);ctx.fillText(D.ylabel,0,0);ctx.restore();
 ctx.font='bold 12px sans-serif';ctx.fillText(D.title,M.l,18);
 ctx.save();ctx.beginPath();ctx.rect(M.l,M.t,W(),H());ctx.clip();
 for(const s of S){ if(!s.on||!s.x.length)continue; ctx.fillStyle=s.color;ctx.strokeStyle=s.color;
  const i0=Math.max(0,lo(s.x,view.x0)-1), i1=Math.min(s.x.length,lo(s.x,view.x1)+1);
  if(i1-i0>RASTER&&s.style!=='events'){raster(s,i0,i1);continue;}
  if(s.style==='step'||s.style==='line'){ctx.beginPath();let first=true,lx=-1e9,ly=0;
   for(let i=i0;i<i1;i++){const X=px(s.x[i]),Y=py(s.y[i]);if(!isFinite(Y))continue;if(first){ctx.moveTo(X,Y);first=false;}else{if(s.style==='step')ctx.lineTo(X,ly);if(Math.abs(X-lx)>=0.5||Math.abs(Y-ly)>=0.5)ctx.lineTo(X,Y);}lx=X;ly=Y;}
   ctx.lineWidth=1.2;ctx.stroke();}
  else { const r=s.style==='events'?4:(s.name.indexOf('rexmt')>=0?3:1.5); let lx=-1,ly=-1;
   for(let i=i0;i<i1;i++){const X=Math.round(px(s.x[i])),Y=Math.round(py(s.y[i]));if(X===lx&&Y===ly)continue;lx=X;ly=Y;
    if(s.style==='events'){ctx.beginPath();ctx.moveTo(X-r,Y-2*r);ctx.lineTo(X+r,Y-2*r);ctx.lineTo(X,Y);ctx.closePath();ctx.stroke();}
    else if(r>2){ctx.beginPath();ctx.moveTo(X-r,Y-r);ctx.lineTo(X+r,Y+r);ctx.moveTo(X-r,Y+r);ctx.lineTo(X+r,Y-r);ctx.lineWidth=1.2;ctx.stroke();}
    else ctx.fillRect(X-r,Y-r,2*r,2*r);}}}
 ctx.restore(); ctx.strokeStyle='#888';ctx.strokeRect(M.l,M.t,W(),H());
 snap=ctx.getImageData(0,0,cv.width,cv.height); overlay();
 const st=document.getElementById('tw-status');
 st.textContent='drawn '+S.filter(s=>s.on).reduce((a,s)=>a+s.x.length,0)+' points';
 st.dataset.drawMs=(performance.now()-t0).toFixed(1);
 window.twDrawn=(window.twDrawn||0)+1;
}
// Hover marks and the zoom box are drawn over a snapshot of the last full drawing,
// so moving the mouse does not redraw the data.
let snap=null;
function overlay(){
 if(!snap)return; ctx.putImageData(snap,0,0);
 ctx.save();ctx.beginPath();ctx.rect(M.l,M.t,W(),H());ctx.clip();
 if(drag&&drag.box){ctx.strokeStyle='#333';ctx.setLineDash([4,3]);ctx.strokeRect(drag.sx,drag.sy,drag.cx-drag.sx,drag.cy-drag.sy);ctx.setLineDash([]);}
 if(hover){ctx.strokeStyle='#000';ctx.lineWidth=1.2;ctx.beginPath();ctx.arc(px(hover.x),py(hover.y),5,0,7);ctx.stroke();}
 ctx.restore();
}
function legend(){const L=document.getElementById('tw-legend');L.innerHTML='';
 S.forEach((s,i)=>{const b=document.createElement('label');b.style.color=s.color;const c=document.createElement('input');c.type='checkbox';c.checked=true;c.dataset.series=s.name;
  c.onchange=()=>{s.on=c.checked;draw();};b.appendChild(c);b.appendChild(document.createTextNode(' '+s.name+' ('+s.x.length+')'));L.appendChild(b);});}
function inv(X,Y){return {x:view.x0+(X-M.l)/W()*(view.x1-view.x0),y:view.y0+(1-(Y-M.t)/H())*(view.y1-view.y0)};}
cv.addEventListener('wheel',e=>{e.preventDefault();const p=inv(e.offsetX,e.offsetY),f=e.deltaY>0?1.25:0.8;
 if(!e.altKey){view.x0=p.x-(p.x-view.x0)*f;view.x1=p.x+(view.x1-p.x)*f;} if(!e.shiftKey){view.y0=p.y-(p.y-view.y0)*f;view.y1=p.y+(view.y1-p.y)*f;} draw();},{passive:false});
cv.addEventListener('mousedown',e=>{drag={sx:e.offsetX,sy:e.offsetY,cx:e.offsetX,cy:e.offsetY,box:e.shiftKey,v:Object.assign({},view)};});
window.addEventListener('mouseup',e=>{if(drag&&drag.box&&Math.abs(drag.cx-drag.sx)>4&&Math.abs(drag.cy-drag.sy)>4){const a=inv(drag.sx,drag.sy),b=inv(drag.cx,drag.cy);
 view={x0:Math.min(a.x,b.x),x1:Math.max(a.x,b.x),y0:Math.min(a.y,b.y),y1:Math.max(a.y,b.y)};} drag=null;draw();});
cv.addEventListener('mousemove',e=>{ if(drag){drag.cx=e.offsetX;drag.cy=e.offsetY; if(!drag.box){const dx=(e.offsetX-drag.sx)/W()*(drag.v.x1-drag.v.x0),dy=(e.offsetY-drag.sy)/H()*(drag.v.y1-drag.v.y0);
  view={x0:drag.v.x0-dx,x1:drag.v.x1-dx,y0:drag.v.y0+dy,y1:drag.v.y1+dy}; draw();} else overlay(); return;}
 let best=null,bd=64; for(const s of S){if(!s.on)continue;const a=inv(e.offsetX-8,0).x,b=inv(e.offsetX+8,0).x;const i0=lo(s.x,a),i1=Math.min(s.x.length,lo(s.x,b)+1);
  for(let i=i0;i<i1;i++){const dx=px(s.x[i])-e.offsetX,dy=py(s.y[i])-e.offsetY,d=dx*dx+dy*dy;if(d<bd){bd=d;best={s:s,x:s.x[i],y:s.y[i]};}}}
 hover=best; if(best){tip.style.display='block';tip.style.left=(e.pageX+12)+'px';tip.style.top=(e.pageY+12)+'px';tip.textContent=best.s.name+': t='+best.x.toFixed(4)+' s, '+fmt(best.y)+' '+(best.s.unit||'');} else tip.style.display='none'; overlay();});
cv.addEventListener('dblclick',()=>{view=bounds();draw();});
window.addEventListener('resize',()=>{size();draw();});
size(); legend(); full=bounds(); view=Object.assign({},full); draw();
})();
"""

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;margin:10px}}#tw-canvas{{width:100%;height:78vh;border:0;cursor:crosshair}}
#tw-legend label{{margin-right:14px;font-size:13px;white-space:nowrap}}#tw-tip{{position:absolute;display:none;background:#ffe;border:1px solid #999;padding:2px 5px;font-size:12px;pointer-events:none}}
#tw-help{{color:#666;font-size:12px}}</style></head><body>
<div id="tw-errors" style="display:none;color:#b00;white-space:pre"></div><div id="tw-legend"></div><canvas id="tw-canvas"></canvas><div id="tw-tip"></div>
<div id="tw-help">wheel: zoom (shift: time only, alt: values only) &middot; drag: pan &middot; shift-drag: zoom to box &middot; double-click: reset &middot; <span id="tw-status"></span>{note}</div>
<script type="application/json" id="tw-data">{data}</script>
<script>{js}</script></body></html>
"""


def _b64(a) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f8").tobytes()).decode("ascii")


def write_html(series: list[Series], meta: dict, out: Path, kind: str) -> Path:
    if kind == "goodput":
        # Histograms become bar-like step series of the share of windows per bin.
        conv = []
        for s in series:
            hi = 1.0 if s.unit == "fraction" else (float(s.y.max()) if len(s.y) else 1.0)
            counts, edges = np.histogram(s.y, bins=50, range=(0, max(hi, 1e-12)))
            share = counts / max(len(s.y), 1)
            conv.append(Series(s.name, edges, np.append(share, share[-1] if len(share) else 0), "step", "share"))
        series = conv
    payload = {
        "title": meta.get("title", ""),
        "xlabel": meta.get("xlabel", ""),
        "ylabel": meta.get("ylabel", ""),
        "series": [],
    }
    palette = ["#1f4e9c", "#2ca02c", "#d62728", "#ff7f0e", "#7b3fa0"]
    for i, s in enumerate(series):
        order = np.argsort(s.x, kind="stable")
        payload["series"].append(
            {
                "name": s.label,
                "style": s.style,
                "unit": s.unit,
                "color": COLORS.get(s.name, palette[i % len(palette)]),
                "x": _b64(np.asarray(s.x, dtype=float)[order]),
                "y": _b64(np.asarray(s.y, dtype=float)[order]),
            }
        )
    note = f" &middot; {_html.escape(meta['note'])}" if meta.get("note") else ""
    data = json.dumps(payload).replace("</", "<\\/")
    from ..outputs import write_text

    write_text(out, _PAGE.format(title=_html.escape(meta.get("title", "thinwire")), data=data, js=_JS, note=note))
    return out

"""The page's inline CSS and script: no font, image or script is ever fetched.

The script only adds interaction (the timeline's read-out, paging the view, sorting the
index); without it every section is still there and readable.
"""
from __future__ import annotations

# Blocks the page can never leave: nothing is fetched, whatever the session's text holds.
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

CSS = """
:root{--fg:#1d2329;--muted:#5f6b76;--line:#d8dee4;--bg:#fff;--panel:#f6f8fa;--accent:#0b62c4;
--user:#e8f1fd;--assistant:#f2f7ee;--system:#f5f0fa;--developer:#f5f0fa;--tool:#f7f7f4;--err:#c62828;--warn:#b26a00}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
header.top{padding:14px 20px;border-bottom:1px solid var(--line);background:var(--panel)}
header.top h1{margin:0;font-size:18px;overflow-wrap:anywhere}
nav.sections a{margin-right:14px;color:var(--accent);text-decoration:none}
main{max-width:1200px;margin:0 auto;padding:0 16px 40px}
section{margin-top:26px}
h2{font-size:16px;border-bottom:1px solid var(--line);padding-bottom:4px}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:12.5px}
pre{white-space:pre-wrap;word-break:break-word;margin:4px 0}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere}
.meter{height:10px;background:var(--line);border-radius:5px;max-width:360px;overflow:hidden;margin-top:3px}
.meter span{display:block;height:100%;background:var(--accent)}
.meter.hot span{background:var(--err)}
.error{color:var(--err);font-weight:600}
.ok{color:#2e7d32}
table{border-collapse:collapse;width:100%;margin:6px 0 14px}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.scroll{overflow-x:auto}
svg.chart{width:100%;min-width:620px;height:auto;display:block;background:#fff}
svg .grid{stroke:#eef1f4}svg .axis,svg .tick{stroke:#8a96a3}
svg .ax{font-size:11px;fill:var(--muted)}svg .lbl{font-size:11px;fill:var(--fg)}svg .lbl.thr{fill:var(--warn)}
svg .window{stroke:var(--fg);stroke-dasharray:6 4}svg .threshold{stroke:var(--warn);stroke-dasharray:3 3}
svg .area{fill:rgba(11,98,196,.12)}svg .ctx{fill:none;stroke:var(--accent);stroke-width:1.5}
svg .cache{fill:none;stroke:#2e7d32;stroke-width:1.2}svg .panel{fill:#f6f8f6;stroke:#dfe6df}svg .lbl.off-scale{fill:var(--muted)}
svg .mk{cursor:help;outline:none}svg .comp line{stroke:var(--err);stroke-width:1.5}svg .comp path{fill:var(--err)}
svg .prune path{fill:#7b1fa2}svg .prefire path{fill:#ef6c00}svg .prefire.pending path{fill:none;stroke:#ef6c00;stroke-width:1.5}
svg .mk:focus line,svg .mk:hover line{stroke-width:3}svg .mk:focus path,svg .mk:hover path{stroke:#000}
svg .cursor{stroke:#000;stroke-opacity:.35}svg .dot{fill:var(--accent);stroke:#fff}
.legend span{margin-right:14px;color:var(--muted);display:inline-block;white-space:nowrap}.legend i{display:inline-block;width:12px;height:3px;vertical-align:middle;margin-right:4px}
.readout{min-height:1.5em;font-variant-numeric:tabular-nums}
.pager{display:flex;gap:8px;align-items:center;margin:8px 0}
.pager button,th button{font:inherit;padding:2px 10px;border:1px solid var(--line);background:var(--panel);border-radius:4px;cursor:pointer}
th button{border:0;background:none;padding:0;font-weight:600}
.page{content-visibility:auto;contain-intrinsic-size:auto 2000px}
.item{border:1px solid var(--line);border-left-width:4px;border-radius:4px;padding:6px 10px;margin:8px 0;background:var(--tool)}
.item.user{background:var(--user);border-left-color:#1565c0}
.item.assistant{background:var(--assistant);border-left-color:#2e7d32}
.item.system,.item.developer{background:var(--system);border-left-color:#6a1b9a}
.item.tool{border-left-color:#8d6e63;background:#fff}
.item.tool.failed{border-left-color:var(--err)}
.item.synthetic{border-style:dashed}
.hd{display:flex;flex-wrap:wrap;gap:4px 10px;align-items:center;color:var(--muted);font-size:12.5px;margin:0}
.hd b{color:var(--fg)}
.badge{font-style:normal;border:1px solid currentColor;border-radius:3px;padding:0 4px;font-size:11.5px}
.badge.syn{color:#6a1b9a}.badge.err{color:var(--err)}
.tok{display:inline-flex;align-items:center;gap:6px;margin-left:auto}
.tok s{display:inline-block;width:120px;height:6px;background:linear-gradient(90deg,var(--accent) var(--w),var(--line) var(--w));border-radius:3px}
.pair{display:grid;grid-template-columns:minmax(0,2fr) minmax(0,3fr);gap:8px;align-items:start;margin-top:6px}
.pair>.call{border:1px dashed var(--line);border-radius:4px;padding:6px 8px;margin:8px 0;background:#fff}
.pair>.item{margin:8px 0}
.clip details>summary{cursor:pointer;color:var(--accent)}
.omitted,.cut{color:var(--muted);font-style:italic;margin:2px 0}
.blob{color:var(--muted)}
@media (max-width:700px){.pair{grid-template-columns:1fr}.tok s{width:60px}main{padding:0 8px 30px}}
"""

JS = r"""
(function(){
'use strict';
function fmt(n){return n==null?'':Number(n).toLocaleString('en-US');}
var dataEl=document.getElementById('timeline-data');
var svg=document.querySelector('#timeline svg.chart');
var out=document.getElementById('readout');
if(dataEl&&svg&&out){
  var d=JSON.parse(dataEl.textContent);var pts=d.points;var n=pts.length;
  var L=+svg.dataset.left,R=+svg.dataset.right,T=+svg.dataset.top,B=+svg.dataset.bottom;
  var cur=svg.querySelector('.cursor'),dot=svg.querySelector('.dot');var sel=-1;
  var show=function(i){
    if(i<0||i>=n)return;sel=i;var p=pts[i];
    var x=L+(i+0.5)*(R-L)/n;var y=B-p[2]/d.ymax*(B-T);
    cur.setAttribute('x1',x);cur.setAttribute('x2',x);cur.setAttribute('visibility','visible');
    dot.setAttribute('cx',x);dot.setAttribute('cy',y);dot.setAttribute('visibility','visible');
    var share=p[4]?Math.round(p[3]*1000/p[4])/10:0;
    out.textContent='request '+(i+1)+' of '+n+' · seq '+p[0]+' · turn '+p[1]+' · '+fmt(p[2])+' context tokens'+(d.estimated?' (estimate)':
      ' · input '+fmt(p[4])+' ('+share+'% cached) · output '+fmt(p[5])+(d.models[p[6]]?' · '+d.models[p[6]]:''))+
      ' · '+(Math.round(p[2]*1000/d.window)/10)+'% of the window';
  };
  var at=function(ev){var r=svg.getBoundingClientRect();var vx=(ev.clientX-r.left)*1000/r.width;return Math.floor((vx-L)*n/(R-L));};
  svg.addEventListener('mousemove',function(ev){if(!ev.target.closest('.mk'))show(Math.max(0,Math.min(n-1,at(ev))));});
  svg.addEventListener('keydown',function(ev){
    if(ev.target!==svg)return;
    var k=ev.key;if(k==='ArrowRight'||k==='ArrowLeft'||k==='Home'||k==='End'){ev.preventDefault();
      show(k==='Home'?0:k==='End'?n-1:Math.max(0,Math.min(n-1,(sel<0?0:sel)+(k==='ArrowRight'?1:-1))));}
  });
  svg.addEventListener('focus',function(){if(sel<0)show(n-1);});
  var marks=svg.querySelectorAll('.mk');
  for(var m=0;m<marks.length;m++){(function(g){
    var tell=function(){out.textContent=g.querySelector('title').textContent;};
    g.addEventListener('focus',tell);g.addEventListener('mouseenter',tell);
  })(marks[m]);}
}
var pages=document.querySelectorAll('#view .page');
var pager=document.getElementById('pager');
if(pages.length>1&&pager){
  var idx=0;var label=pager.querySelector('.where');
  var go=function(i){idx=Math.max(0,Math.min(pages.length-1,i));
    for(var p=0;p<pages.length;p++)pages[p].hidden=(p!==idx);
    label.textContent='page '+(idx+1)+' of '+pages.length;};
  pager.hidden=false;
  pager.querySelector('.prev').addEventListener('click',function(){go(idx-1);});
  pager.querySelector('.next').addEventListener('click',function(){go(idx+1);});
  pager.querySelector('.all').addEventListener('click',function(){for(var p=0;p<pages.length;p++)pages[p].hidden=false;label.textContent='all '+pages.length+' pages';});
  var jump=function(){var h=location.hash.slice(1);var el=h&&document.getElementById(h);
    if(el){var pg=el.closest('.page');if(pg){go(+pg.dataset.page);el.scrollIntoView();}}};
  window.addEventListener('hashchange',jump);
  go(0);jump();
}
var table=document.querySelector('table.sortable');
if(table){
  var heads=table.querySelectorAll('th button');
  var sortBy=function(col,asc){
    var btn=heads[col];var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
    for(var o=0;o<heads.length;o++)heads[o].removeAttribute('aria-sort');
    btn.setAttribute('aria-sort',asc?'ascending':'descending');
    var key=function(r){var c=r.cells[col];var v=c.getAttribute('data-v');return v===null?c.textContent:v;};
    var numeric=btn.dataset.type==='n';
    rows.sort(function(a,b){var x=key(a),y=key(b);
      if(numeric){x=x===''?-Infinity:+x;y=y===''?-Infinity:+y;return asc?x-y:y-x;}
      return asc?x.localeCompare(y):y.localeCompare(x);});
    for(var r=0;r<rows.length;r++)body.appendChild(rows[r]);
  };
  for(var h=0;h<heads.length;h++){(function(col){
    heads[col].addEventListener('click',function(){sortBy(col,heads[col].getAttribute('aria-sort')!=='ascending');});
  })(h);}
  // index.html#sort=cost (ascending) or #sort=-cost (descending): a link that opens sorted
  var want=/^#sort=(-?)([a-z_]+)$/.exec(location.hash);
  if(want){for(var k=0;k<heads.length;k++){if(heads[k].dataset.key===want[2])sortBy(k,want[1]!=='-');}}
}
document.documentElement.setAttribute('data-ready',String(Math.round(performance.now())));
})();
"""

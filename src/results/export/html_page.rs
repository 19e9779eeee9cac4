//! The shell every HTML page shares: one self-contained document (style and script inline, no
//! network), sortable tables, zoomable timelines drawn on a canvas, and a record of script
//! errors in the page itself (`#errors`, `data-ready` on `<body>`) that tests read back.

use std::fmt::Write as _;

use crate::results::export::html_timeline::Timeline;
use crate::results::export::roofline_chart::{bound_colour, escape};
use crate::results::roofline::Bound;

const STYLE: &str = r#"
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
th[data-sort]{cursor:pointer;background:#f4f4f4}th[data-sort]:hover{background:#e8e8e8}
td.name{font-family:ui-monospace,monospace;overflow-wrap:break-word;max-width:40em}
.nw{white-space:nowrap}
.rule-line{font:12px system-ui,sans-serif;color:#666;margin-top:2px}
table.kernels tbody tr{cursor:pointer}table.kernels tr.selected{background:#fff6d6}
.kernel-detail{border:1px solid #ccc;padding:.4em 1em;margin:.5em 0}
.kernel-detail .cols{display:flex;flex-wrap:wrap;gap:.5em 2.5em}
.kernel-detail dl{display:grid;grid-template-columns:auto auto;gap:0 1em;margin:0}
.kernel-detail dd{margin:0;font-variant-numeric:tabular-nums}.kernel-detail h4{margin:.6em 0 .2em}
.kernel-detail h3.name{font-family:ui-monospace,monospace;overflow-wrap:break-word;font-size:1em}
.roofline-chart.empty{flex-basis:100%;color:#555}
.note{color:#555}.note,figcaption{overflow-wrap:break-word}.bad{color:#b00020;font-weight:600}.good{color:#1b7f3b}
.legend span{display:inline-block;margin-right:1em}
.legend i{display:inline-block;width:.8em;height:.8em;border-radius:50%;margin-right:.3em}
.timeline{position:relative;border:1px solid #ccc;margin:.5em 0}
.timeline canvas{display:block;width:100%}
.tools{display:flex;gap:.4em;align-items:center;padding:3px;border-bottom:1px solid #eee}
.tools button{min-width:2.2em}.tools input{width:22em}.tools .view{color:#555}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
.rooflines{display:flex;flex-wrap:wrap;gap:1em}
.roofline-chart{margin:0;flex:1 1 100%;max-width:900px;min-width:0}
.roofline-chart svg{width:100%;height:auto}
.tip{position:fixed;pointer-events:none;background:#fff;border:1px solid #888;padding:4px 6px;
 font:12px ui-monospace,monospace;white-space:pre;display:none;z-index:9;max-width:60em;
 overflow:hidden}
#errors{color:#b00020}
pre.header{white-space:pre-wrap;overflow-wrap:break-word}
.scroll{overflow-x:auto}.note.narrow{display:none}.long{overflow-wrap:anywhere}
@media (max-width:900px){table{font-size:12px}th,td{padding:3px 5px}.note.narrow{display:block}
 table.kernels tr>:nth-child(4),table.kernels tr>:nth-child(5),table.kernels tr>:nth-child(6){display:none}}
"#;

/// Sortable tables, timelines, and the error and readiness record.
const SCRIPT: &str = r#"
(function(){
const errs=[];
window.addEventListener('error',e=>{errs.push(String(e.message));
 const el=document.getElementById('errors');if(el){el.textContent=errs.join('\n');el.dataset.count=errs.length;}});
function val(td){const v=td.dataset.v;return v===undefined?td.textContent:(v===''?NaN:Number(v));}
document.querySelectorAll('table.sortable').forEach(t=>{
 t.querySelectorAll('th[data-sort]').forEach((th,col)=>{th.addEventListener('click',()=>{
  const body=t.tBodies[0];const rows=[...body.rows];const desc=th.dataset.dir!=='desc';
  th.dataset.dir=desc?'desc':'asc';const i=th.cellIndex;
  rows.sort((a,b)=>{const x=val(a.cells[i]),y=val(b.cells[i]);
   if(typeof x==='number'&&typeof y==='number'){if(isNaN(x))return 1;if(isNaN(y))return -1;return desc?y-x:x-y;}
   return desc?String(y).localeCompare(String(x)):String(x).localeCompare(String(y));});
  rows.forEach(r=>body.appendChild(r));});});});
const tip=document.createElement('div');tip.className='tip';document.body.appendChild(tip);
function fmt(us){if(us>=1e6)return (us/1e6).toFixed(6)+' s';if(us>=1e3)return (us/1e3).toFixed(4)+' ms';return us.toFixed(3)+' µs';}
document.querySelectorAll('.timeline').forEach(box=>{
 const d=JSON.parse(box.querySelector('script').textContent);
 const s=d.slices,n=s.length/4,laneH=18,labelW=220;
 const cv=box.querySelector('canvas');const ctx=cv.getContext('2d');
 const q=sel=>box.querySelector(sel);const list=q('.in-view'),lanesList=q('.lane-labels'),status=q('.view'),find=q('input');
 let end=0;for(let k=0;k<n;k++)end=Math.max(end,s[4*k+1]+s[4*k+2]);if(end<=0)end=1;
 let t0=0,t1=end*1.02,hit=-1;
 const colours=['#4e79a7','#f28e2b','#e15759','#76b7b2','#59a14f','#edc948','#b07aa1','#ff9da7','#9c755f','#bab0ac'];
 function size(){cv.width=box.clientWidth;cv.height=laneH*(d.lanes.length+1)+4;}
 function x(t){return labelW+(t-t0)/(t1-t0)*(cv.width-labelW);}
 // Slices at least this wide (px) are listed in the DOM (.in-view, for screen readers and
 // tests), up to a number that stays cheap to rebuild at every wheel step.
 const LIST_PX=2,LIST_MAX=200;
 function draw(){ctx.clearRect(0,0,cv.width,cv.height);ctx.font='11px sans-serif';
  const shown=[];
  for(let k=0;k<n;k++){const a=s[4*k+1],w=s[4*k+2];if(a+w<t0||a>t1)continue;
   const l=s[4*k],px=Math.max(labelW,x(a)),pw=Math.max(1,Math.min(cv.width,x(a+w))-px);
   ctx.fillStyle=colours[s[4*k+3]%colours.length];ctx.fillRect(px,laneH*l+2,pw,laneH-4);
   if(k===hit){ctx.strokeStyle='#000';ctx.lineWidth=2;ctx.strokeRect(px,laneH*l+2,pw,laneH-4);}
   if(pw>=LIST_PX&&shown.length<=LIST_MAX)shown.push([k,px,pw]);
   // Names inside slices wide enough to hold a few letters.
   if(pw>40){const name=d.names[s[4*k+3]];ctx.save();ctx.beginPath();ctx.rect(px,laneH*l,pw,laneH);ctx.clip();
    ctx.fillStyle='#fff';ctx.fillText(name,px+3,laneH*l+13);ctx.restore();}}
  ctx.fillStyle='#fff';ctx.fillRect(0,0,labelW,cv.height);ctx.fillStyle='#222';
  // A lane name wider than the label column keeps its end (the stream id) and loses its
  // middle, measured in the font it is drawn in; the labels as drawn are listed in the DOM.
  const labels=d.lanes.map(laneLabel);labels.forEach((t,l)=>ctx.fillText(t,4,laneH*l+13));
  if(lanesList.dataset.text!==labels.join('\n')){lanesList.dataset.text=labels.join('\n');
   lanesList.replaceChildren(...labels.map((t,l)=>{const li=document.createElement('li');
    li.textContent=t;li.dataset.lane=d.lanes[l];li.dataset.w=ctx.measureText(t).width.toFixed(1);return li;}));}
  const y=laneH*d.lanes.length+14;ctx.fillText(fmt(t0),labelW,y);
  const r=fmt(t1);ctx.fillText(r,cv.width-ctx.measureText(r).width-4,y);
  box.dataset.t0=t0;box.dataset.t1=t1;
  status.textContent=fmt(t0)+' – '+fmt(t1)+' ('+fmt(t1-t0)+' wide)';
  list.replaceChildren();list.dataset.more=shown.length>LIST_MAX?'1':'0';
  if(shown.length<=LIST_MAX)shown.forEach(([k,px,pw])=>{const li=document.createElement('li');
   li.textContent=d.names[s[4*k+3]];li.dataset.lane=s[4*k];li.dataset.x=px.toFixed(1);li.dataset.w=pw.toFixed(1);
   li.dataset.start=s[4*k+1];li.dataset.dur=s[4*k+2];list.appendChild(li);});}
 function laneLabel(name){const room=labelW-8;if(ctx.measureText(name).width<=room)return name;
  const tail=name.slice(name.lastIndexOf(' · ')+3);let head=name.length-tail.length;
  while(head>0&&ctx.measureText(name.slice(0,head)+'…'+tail).width>room)head--;
  let t=name.slice(0,head)+'…'+tail;
  // The end alone too wide: keep as much of it as fits, from its end (the stream id).
  while(t.length>2&&ctx.measureText(t).width>room)t='…'+t.slice(2);return t;}
 function view(a,b){const w=Math.max(1e-3,b-a);t0=a;t1=a+w;draw();}
 function zoom(f,z){const c=t0+f*(t1-t0),w=Math.max(1e-3,(t1-t0)*z);view(c-f*w,c-f*w+w);}
 function at(ev){const r=cv.getBoundingClientRect();const px=ev.clientX-r.left,py=ev.clientY-r.top;
  const l=Math.floor(py/laneH);const t=t0+(px-labelW)/(cv.width-labelW)*(t1-t0);const tol=(t1-t0)/(cv.width-labelW)*2;
  for(let k=0;k<n;k++){if(s[4*k]===l&&s[4*k+1]-tol<=t&&t<=s[4*k+1]+s[4*k+2]+tol)return k;}return -1;}
 // One wheel notch (100 px) zooms by 0.7 at the cursor; finer deltas (touchpads) by less.
 cv.addEventListener('wheel',ev=>{ev.preventDefault();const r=cv.getBoundingClientRect();
  const f=Math.max(0,(ev.clientX-r.left-labelW)/(cv.width-labelW));
  const dy=Math.max(-300,Math.min(300,ev.deltaY*(ev.deltaMode===1?33:1)));zoom(f,Math.pow(0.7,-dy/100));},{passive:false});
 let drag=null;cv.addEventListener('mousedown',ev=>{drag=[ev.clientX,t0,t1];});
 window.addEventListener('mouseup',()=>{drag=null;});
 cv.addEventListener('mousemove',ev=>{if(drag){const dt=(ev.clientX-drag[0])/(cv.width-labelW)*(drag[2]-drag[1]);
   t0=drag[1]-dt;t1=drag[2]-dt;draw();return;}
  const k=at(ev);if(k<0){tip.style.display='none';return;}
  tip.textContent=d.names[s[4*k+3]]+'\n'+d.lanes[s[4*k]]+'\nstart '+fmt(s[4*k+1])+', duration '+fmt(s[4*k+2]);
  tip.style.left=(ev.clientX+12)+'px';tip.style.top=(ev.clientY+12)+'px';tip.style.display='block';});
 cv.addEventListener('mouseleave',()=>{tip.style.display='none';});
 function all(){hit=-1;view(0,end*1.02);}
 cv.addEventListener('dblclick',all);
 q('button.in').addEventListener('click',()=>zoom(0.5,0.5));
 q('button.out').addEventListener('click',()=>zoom(0.5,2));
 q('button.all').addEventListener('click',all);
 // Find: the next slice whose name holds the text, centred and zoomed to 1/8 of the view.
 function next(){const text=find.value.trim().toLowerCase();if(!text)return;
  for(let i=1;i<=n;i++){const k=(hit+i)%n;if(d.names[s[4*k+3]].toLowerCase().includes(text)){
   hit=k;const a=s[4*k+1],w=Math.max(s[4*k+2],1e-3);view(a-3.5*w,a+4.5*w);box.dataset.found=d.names[s[4*k+3]];return;}}
  box.dataset.found='';status.textContent='no slice named like “'+find.value+'”';}
 find.addEventListener('keydown',ev=>{if(ev.key==='Enter')next();});
 q('button.find').addEventListener('click',next);
 box.dataset.slices=n;box.dataset.lanes=d.lanes.length;
 size();draw();window.addEventListener('resize',()=>{size();draw();});});
document.querySelectorAll('svg.roofline circle.point').forEach(c=>{
 c.addEventListener('mousemove',ev=>{tip.textContent=c.querySelector('title').textContent;
  tip.style.left=(ev.clientX+12)+'px';tip.style.top=(ev.clientY+12)+'px';tip.style.display='block';});
 c.addEventListener('mouseleave',()=>{tip.style.display='none';});});
// The kernel drilldown: a row or a roofline point opens its panel.
function openKernel(short){let found=null;
 document.querySelectorAll('.kernel-detail').forEach(p=>{const on=p.dataset.short===short;p.hidden=!on;if(on)found=p;});
 document.querySelectorAll('table.kernels tr[data-short]').forEach(r=>r.classList.toggle('selected',r.dataset.short===short));
 if(found){document.body.dataset.openKernel=short;const h=document.getElementById('drilldown-hint');if(h)h.hidden=true;
  found.scrollIntoView({block:'nearest'});}}
document.querySelectorAll('table.kernels tr[data-short]').forEach(r=>r.addEventListener('click',()=>openKernel(r.dataset.short)));
document.querySelectorAll('svg.roofline circle.point').forEach(c=>{c.style.cursor='pointer';
 c.addEventListener('click',()=>openKernel(c.dataset.short));});
document.querySelectorAll('button.show-on-timeline').forEach(b=>b.addEventListener('click',()=>{
 const box=document.querySelector('.timeline');if(!box)return;const f=box.querySelector('input');
 f.value=b.dataset.find;box.querySelector('button.find').click();box.scrollIntoView({block:'nearest'});}));
document.body.offsetHeight;
document.body.dataset.renderMs=performance.now().toFixed(1);
document.body.dataset.ready='1';
})();
"#;

/// A whole page: `body` (HTML) under `title`, with the shared style and script.
pub fn page(title: &str, body: &str) -> String {
    let mut html = String::with_capacity(body.len() + STYLE.len() + SCRIPT.len() + 512);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <meta name=\"generator\" content=\"polyprof {version}\">\
         <title>{title}</title><style>{STYLE}</style></head>\n<body>\
         <h1>{title}</h1><pre id=\"errors\" data-count=\"0\"></pre>\n{body}\n\
         <script>{SCRIPT}</script></body></html>\n",
        version = env!("CARGO_PKG_VERSION"),
        title = escape(title),
    );
    html
}

/// A timeline panel: its data as JSON inside the box the script draws into.
pub fn timeline(panel: &Timeline) -> String {
    if panel.slices.is_empty() {
        return String::new();
    }
    let data = crate::results::escape::json_in_html::to_string(panel).unwrap_or_default();
    let note = match panel.note.is_empty() {
        true => String::new(),
        false => format!("<p class=\"note\">{}</p>", escape(&panel.note)),
    };
    format!(
        "<h3>{title}</h3><p class=\"note\">{count} slices. Wheel: zoom at the cursor; drag: pan; \
         double click or ⤢: everything; + and −: zoom at the centre; find: the next slice whose \
         name holds the text, zoomed to; hover: name and times.</p>{note}\
         <div class=\"timeline\" data-slices=\"0\"><div class=\"tools\">\
         <button class=\"in\" title=\"zoom in\">+</button>\
         <button class=\"out\" title=\"zoom out\">−</button>\
         <button class=\"all\" title=\"everything\">⤢</button>\
         <input type=\"search\" placeholder=\"find a kernel or step by name\" aria-label=\"find\">\
         <button class=\"find\">find</button><span class=\"view\"></span></div>\
         <canvas height=\"40\"></canvas>\
         <ul class=\"in-view sr\" aria-label=\"slices in view\"></ul>\
         <ul class=\"lane-labels sr\" aria-label=\"lanes\"></ul>\
         <script type=\"application/json\">{data}</script></div>",
        title = escape(&panel.title),
        count = panel.slice_count(),
    )
}

/// The verdict colours, as the roofline draws them.
pub fn legend() -> String {
    let mut html = String::from("<p class=\"legend\">");
    for bound in [
        Bound::Memory,
        Bound::Compute,
        Bound::Latency,
        Bound::Unknown,
    ] {
        let _ = write!(
            html,
            "<span><i style=\"background:{}\"></i>{}</span>",
            bound_colour(bound),
            match bound {
                Bound::Unknown => "unknown".to_string(),
                bound => format!("{bound}-bound"),
            }
        );
    }
    html.push_str("</p>");
    html
}

/// A table cell holding a number: shown as `text`, sorted by `value` (missing: last).
pub fn number_cell(value: Option<f64>, text: &str) -> String {
    let v = value
        .filter(|v| v.is_finite())
        .map(|v| v.to_string())
        .unwrap_or_default();
    format!("<td class=\"n\" data-v=\"{v}\">{}</td>", escape(text))
}

/// A plain text cell.
pub fn text_cell(text: &str) -> String {
    format!("<td>{}</td>", escape(text))
}

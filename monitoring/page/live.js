// The live page of a ddprun rendezvous server: polls /api/jobs (the JSON `ddprun status --json`
// prints, with rank progress for the job shown only) once a second, lists the jobs, and for the one chosen (#job=ID, or the first running
// one) plots each rank's step and pace over the last minutes, kept here from the polls. Every
// value is written as text (textContent), never as markup: job ids and hosts come from clients.
"use strict";

const POLL_MS = 1000;
// The plots span what the page has seen, from 30 s up to the last 5 minutes.
const WINDOW_MS = 5 * 60 * 1000;
const SHORTEST_SPAN_MS = 30 * 1000;
const history = new Map();  // "job/rank" -> [{t, step, pace}], oldest first
let chosen = decodeURIComponent((location.hash.match(/^#job=(.*)$/) || [])[1] || "");

function cell(row, text, className) {
  const td = row.insertCell();
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function seconds(ms) {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function ranksOf(job) {
  const ranks = [];
  for (const node of job.nodes) {
    for (const rank of node.ranks) ranks.push({...rank, host: node.host});
  }
  return ranks.sort((a, b) => a.global_rank - b.global_rank);
}

function pace(rank) {
  return rank.step_time_us > 0 ? 1e6 / rank.step_time_us : null;
}

function rankState(rank) {
  if (rank.hung) return "hung";
  if (rank.straggler) return "straggler";
  if (rank.finished) return "finished";
  if (!rank.progressed) return "starting";
  return rank.in_collective ? "in a collective" : "running";
}

function remember(job, now) {
  for (const rank of ranksOf(job)) {
    const key = `${job.job_id}/${rank.global_rank}`;
    const points = history.get(key) || [];
    points.push({t: now, step: rank.step, pace: pace(rank), hung: rank.hung});
    while (points.length && points[0].t < now - WINDOW_MS) points.shift();
    history.set(key, points);
  }
}

// Hues from blue round the wheel, short of red, which marks a hung rank.
function color(rank, count) {
  return `hsl(${Math.round(200 + (300 * rank) / Math.max(count, 1)) % 360}, 65%, 42%)`;
}

// Lines of `value(point)` for each rank of `job` on `canvas`, time across; how many were drawn.
function plot(canvas, job, ranks, value, now) {
  const context = canvas.getContext("2d");
  const width = canvas.width, height = canvas.height, left = 56, bottom = 22;
  context.clearRect(0, 0, width, height);
  const series = ranks.map((rank) => ({
    rank,
    points: (history.get(`${job.job_id}/${rank.global_rank}`) || [])
                .filter((p) => value(p) !== null && value(p) >= 0),
  }));
  let top = 0, oldest = now;
  for (const s of series) {
    for (const p of s.points) {
      top = Math.max(top, value(p));
      oldest = Math.min(oldest, p.t);
    }
  }
  const span = Math.min(WINDOW_MS, Math.max(SHORTEST_SPAN_MS, now - oldest));
  top = top > 0 ? top * 1.1 : 1;
  context.strokeStyle = "#c9ced8";
  context.fillStyle = "#555";
  context.font = "11px system-ui, sans-serif";
  context.lineWidth = 1;
  for (let i = 0; i <= 4; ++i) {
    const y = (height - bottom) * (1 - i / 4);
    context.beginPath();
    context.moveTo(left, y);
    context.lineTo(width, y);
    context.stroke();
    context.fillText((top * i / 4).toPrecision(3), 2, Math.max(y, 10));
  }
  for (let tick = 0; tick <= 5; ++tick) {
    const x = left + (width - left) * (1 - tick / 5);
    const ago = Math.round((span * tick) / 5 / 1000);
    const label = tick === 0 ? "now" : ago >= 120 ? `-${(ago / 60).toFixed(1)} min` : `-${ago} s`;
    context.fillText(label, Math.min(x - 16, width - 28), height - 6);
  }
  const x = (t) => left + (width - left) * (1 - (now - t) / span);
  const y = (v) => (height - bottom) * (1 - v / top);
  let drawn = 0;
  for (const {rank, points} of series) {
    if (!points.length) continue;
    ++drawn;
    context.strokeStyle = context.fillStyle = color(rank.global_rank, ranks.length);
    context.lineWidth = 1.5;
    context.beginPath();
    points.forEach((p, i) => (i ? context.lineTo : context.moveTo).call(context, x(p.t), y(value(p))));
    context.stroke();
    // While the job named the rank hung: red and dashed over its own line.
    context.strokeStyle = context.fillStyle = "#d0021b";
    context.lineWidth = 3;
    context.setLineDash([6, 4]);
    context.beginPath();
    for (let i = 1; i < points.length; ++i) {
      if (!points[i].hung || !points[i - 1].hung) continue;
      context.moveTo(x(points[i - 1].t), y(value(points[i - 1])));
      context.lineTo(x(points[i].t), y(value(points[i])));
    }
    context.stroke();
    context.setLineDash([]);
    const last = points[points.length - 1];
    if (!last.hung) context.fillStyle = color(rank.global_rank, ranks.length);
    context.fillRect(x(last.t) - 3, y(value(last)) - 3, 6, 6);
  }
  canvas.dataset.ranksDrawn = String(drawn);
  return drawn;
}

function showJobs(jobs) {
  const body = document.querySelector("#jobs tbody");
  body.replaceChildren();
  document.getElementById("no-jobs").hidden = jobs.length > 0;
  for (const job of jobs) {
    const row = body.insertRow();
    row.dataset.job = job.job_id;
    if (job.job_id === chosen) row.className = "selected";
    cell(row, job.job_id);
    cell(row, job.state, `state-${job.state}`);
    cell(row, job.round, "number");
    cell(row, job.node_count, "number");
    cell(row, job.ranks_reporting || job.worker_count, "number");
    cell(row, `${job.restarts_used} of ${job.max_restarts}`, "number");
    cell(row, job.hangs, "number");
    cell(row, job.stragglers, "number");
    cell(row, job.nodes_lost, "number");
    cell(row, job.last_failure, "failure");
    row.addEventListener("click", () => {
      location.hash = `job=${encodeURIComponent(job.job_id)}`;
    });
  }
}

function showJob(job, now) {
  const section = document.getElementById("job");
  section.hidden = !job;
  if (!job) return;
  const ranks = ranksOf(job);
  document.getElementById("job-title").textContent = `Job ${job.job_id}`;
  const hung = ranks.filter((r) => r.hung).length;
  // A large job's poll holds only its ranks worth a look (the server's PageAbridgement).
  const shownOf = job.abridged ?
      ` (shown: ${ranks.length}, the hung, the stragglers and those furthest behind)` : "";
  document.getElementById("job-summary").textContent =
      `${job.state}, round ${job.round}, ${job.node_count} node(s), ${job.ranks_reporting} ` +
      `rank(s) reporting${shownOf}; restarts ${job.restarts_used} of ${job.max_restarts}; hangs found ` +
      `${job.hangs}${hung ? ` (${hung} rank(s) hung now)` : ""}; stragglers named ${job.stragglers}` +
      (job.hang_timeout_ms ? `; hang timeout ${seconds(job.hang_timeout_ms)}` : "");
  document.getElementById("job-failure").textContent =
      job.last_failure ? `Last failure: ${job.last_failure}` : "";
  document.getElementById("no-progress").hidden = ranks.length > 0;
  plot(document.getElementById("steps"), job, ranks, (p) => p.step, now);
  plot(document.getElementById("pace"), job, ranks, (p) => p.pace, now);
  const legend = document.getElementById("legend");
  legend.replaceChildren();
  const body = document.querySelector("#ranks tbody");
  body.replaceChildren();
  for (const rank of ranks) {
    const key = document.createElement("span");
    const swatch = document.createElement("i");
    swatch.style.background = rank.hung ? "#d0021b" : color(rank.global_rank, ranks.length);
    key.append(swatch, `rank ${rank.global_rank}`);
    legend.append(key);
    const row = body.insertRow();
    row.dataset.rank = rank.global_rank;
    const state = rankState(rank);
    row.className = state === "hung" || state === "straggler" ? state : "";
    cell(row, rank.global_rank, "number");
    cell(row, rank.host);
    cell(row, rank.local_rank, "number");
    cell(row, rank.step < 0 ? "-" : rank.step, "number");
    const steps = pace(rank);
    cell(row, steps === null ? "-" : steps.toFixed(2), "number");
    cell(row, rank.collectives, "number");
    cell(row, seconds(rank.last_progress_age_ms), "number");
    cell(row, state, "rank-state");
  }
}

async function poll() {
  const updated = document.getElementById("updated");
  try {
    const answer = await fetch(`api/jobs?job=${encodeURIComponent(chosen)}`, {cache: "no-store"});
    if (!answer.ok) throw new Error(`${answer.status} ${answer.statusText}`);
    const jobs = (await answer.json()).jobs || [];
    const now = Date.now();
    for (const job of jobs) remember(job, now);
    if (!jobs.some((job) => job.job_id === chosen)) {
      const running = jobs.find((job) => job.state === "running") || jobs[0];
      chosen = running ? running.job_id : "";
    }
    showJobs(jobs);
    showJob(jobs.find((job) => job.job_id === chosen), now);
    updated.textContent = `updated ${new Date(now).toLocaleTimeString()}`;
    updated.className = "";
  } catch (error) {
    updated.textContent = `lost contact: ${error.message}`;
    updated.className = "lost";
  }
}

window.addEventListener("hashchange", () => {
  chosen = decodeURIComponent((location.hash.match(/^#job=(.*)$/) || [])[1] || "");
  poll();
});
document.getElementById("server").textContent = location.host;
poll();
setInterval(poll, POLL_MS);

// The standalone status page: current component states from /health (refreshed) and the
// incident and maintenance history from /api/status/incidents. Plain DOM, no framework,
// so it can be deployed as a static file on any origin: the API it reads is named by the
// page's own <meta name="mia-api-base"> (set by whoever deploys it), never by the URL, so a
// link cannot make the page show another server's state under this page's name.
(function () {
  'use strict';
  var meta = document.querySelector('meta[name="mia-api-base"]');
  var base = ((meta && meta.content) || '').replace(/\/+$/, '');
  var REFRESH_MS = 30000;
  var HEADLINES = {
    ok: 'All systems operational',
    degraded: 'Some components are degraded',
    down: 'Service is down',
    unknown: 'Status unavailable',
  };
  var COMPONENTS = [
    ['database', 'Database'],
    ['mail', 'Mail provider'],
    ['ai', 'AI provider'],
  ];

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      node.setAttribute(k, attrs[k]);
    });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function renderHealth(report) {
    var status = report && HEADLINES[report.status] ? report.status : 'unknown';
    var overall = document.getElementById('overall');
    overall.className = 'overall ' + status;
    overall.dataset.status = status;
    overall.textContent = HEADLINES[status];
    var body = document.querySelector('#components tbody');
    body.textContent = '';
    COMPONENTS.forEach(function (c) {
      var key = c[0];
      var state = 'unknown',
        detail = 'no answer from the service';
      if (report) {
        if (key === 'database') {
          state = report.database === 'ok' ? 'operational' : 'down';
          detail = report.database === 'ok' ? 'reachable' : 'unreachable';
        } else if (report[key]) {
          state = report[key].state;
          detail = report[key].detail;
        }
      }
      var row = el('tr', { 'data-component': key });
      row.appendChild(el('td', {}, c[1]));
      row.appendChild(el('td', { class: 'state-' + state, 'data-state': state }, state.replace('_', ' ')));
      row.appendChild(el('td', {}, detail));
      body.appendChild(row);
    });
    var at = document.getElementById('checked-at');
    at.textContent = report ? new Date(report.time).toLocaleString() : new Date().toLocaleString();
    if (report) at.setAttribute('datetime', report.time);
  }

  function renderIncident(i) {
    var li = el('li', { 'data-incident': i.id, 'data-kind': i.kind, 'data-state': i.state });
    var title = el('strong', {}, i.title);
    li.appendChild(title);
    li.appendChild(el('span', { class: 'badge' }, i.state.replace('_', ' ')));
    li.appendChild(el('p', {}, i.message));
    var when = 'Starts ' + new Date(i.startsAt).toLocaleString();
    if (i.resolvedAt)
      when += ' · ' + (i.kind === 'maintenance' ? 'completed ' : 'resolved ') + new Date(i.resolvedAt).toLocaleString();
    if (i.affectedComponents.length) when += ' · affects ' + i.affectedComponents.join(', ');
    li.appendChild(el('p', { class: 'meta' }, when));
    return li;
  }

  function renderIncidents(list) {
    var maintenance = document.getElementById('maintenance');
    var history = document.getElementById('history');
    maintenance.textContent = '';
    history.textContent = '';
    var upcoming = list.filter(function (i) {
      return i.kind === 'maintenance' && i.state !== 'completed';
    });
    var past = list.filter(function (i) {
      return upcoming.indexOf(i) < 0;
    });
    upcoming.forEach(function (i) {
      maintenance.appendChild(renderIncident(i));
    });
    past.forEach(function (i) {
      history.appendChild(renderIncident(i));
    });
    if (!upcoming.length) maintenance.appendChild(el('li', { class: 'muted' }, 'No maintenance scheduled.'));
    if (!past.length) history.appendChild(el('li', { class: 'muted' }, 'No incidents reported.'));
  }

  function getJson(path) {
    return fetch(base + path, { headers: { Accept: 'application/json' }, cache: 'no-store' }).then(function (res) {
      return res.json().then(function (body) {
        return { status: res.status, body: body };
      });
    });
  }

  function refresh() {
    // /health answers 503 with the full report when the database is down: render it either way.
    getJson('/health').then(
      function (r) {
        renderHealth(r.body && r.body.service ? r.body : null);
      },
      function () {
        renderHealth(null);
      },
    );
    getJson('/api/status/incidents').then(
      function (r) {
        if (r.body && r.body.incidents) renderIncidents(r.body.incidents);
      },
      function () {},
    );
  }

  refresh();
  setInterval(refresh, REFRESH_MS);
})();

// The admin page of cohort: groups, rebalances, lag and the cluster, live. Plain browser JavaScript, no
// build step. Everything it shows arrives over one stream (GET /api/stream, Server-Sent Events read with
// fetch so the bearer token can ride in an Authorization header). Client data (group ids, client ids,
// hosts, topic names) only ever becomes text: the page builds nodes with textContent and never assigns
// markup.
'use strict';

(function () {
  const TOKEN_KEY = 'cohort-admin-token';
  const RECONNECT_MS = 2000;

  /** groupId → the group's row of the groups table (src/live/board-views.ts, BoardGroupRow). */
  const groups = new Map();
  /**
   * The whole view of the group whose detail the page shows (src/live/board-views.ts, BoardGroup): the server sends
   * it for that group only, once told which (tellSelection); null until it has.
   */
  let shown = null;
  const state = {
    selected: decodeURIComponent(location.hash.replace(/^#group=/, '')) || null,
    filter: '',
    sortKey: 'groupId',
    sortDir: 1,
    serverNowMs: Date.now(),
    skewMs: 0,
    renderPending: false,
    detailDirty: true,
    clusterDirty: false,
    problemsOnly: false,
    /** The stream's id (its hello frame), and the group the server was last told this page shows. */
    streamId: null,
    toldSelected: null,
    /** The last selection request, so the next waits for it (see tellSelection). */
    selectionSent: Promise.resolve(),
  };
  /** The server's view of the cluster (src/live/cluster-board.ts, ClusterView); null before the first. */
  let cluster = null;
  let chart = null;
  let chartGroupId = null;

  const $ = (id) => document.getElementById(id);

  /** An element with text children only: strings become text nodes, never markup. */
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    if (props) {
      for (const [key, value] of Object.entries(props)) {
        if (value === undefined || value === null) continue;
        if (key === 'class') node.className = value;
        else if (key === 'title') node.title = value;
        else node.setAttribute(key, value);
      }
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === 'string' || typeof child === 'number' ? String(child) : child);
    }
    return node;
  }

  function nowMs() {
    return Date.now() + state.skewMs;
  }

  function ago(ms) {
    if (ms === null || ms === undefined) return '—';
    const s = Math.max(0, Math.round((nowMs() - ms) / 1000));
    if (s < 60) return `${s}s ago`;
    if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s ago`;
    return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m ago`;
  }

  // One formatter for every timestamp: toLocaleTimeString builds a new one per call, which a timeline of
  // 20 rebalances re-rendered on each change made the page's most expensive script.
  const CLOCK_FORMAT = new Intl.DateTimeFormat([], {
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
    hour12: false,
  });

  function clock(ms) {
    return CLOCK_FORMAT.format(ms);
  }

  function duration(ms) {
    return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
  }

  function formatLag(text) {
    if (text === null || text === undefined) return '—';
    return BigInt(text).toLocaleString('en-US');
  }

  function assignmentText(assignment) {
    if (assignment === null) return '—';
    if (assignment.length === 0) return 'none';
    const byTopic = new Map();
    for (const tp of assignment) {
      if (!byTopic.has(tp.topic)) byTopic.set(tp.topic, []);
      byTopic.get(tp.topic).push(tp.partition);
    }
    return [...byTopic].map(([topic, parts]) => `${topic}(${parts.join(',')})`).join(' ');
  }

  function stateBadge(text) {
    return el('span', { class: `state ${text}` }, text);
  }

  // ---- rendering --------------------------------------------------------------------------------

  function scheduleRender() {
    if (state.renderPending) return;
    state.renderPending = true;
    requestAnimationFrame(() => {
      state.renderPending = false;
      renderGroups();
      if (state.detailDirty) renderDetail();
      state.detailDirty = false;
      if (state.clusterDirty) renderCluster();
      state.clusterDirty = false;
      tellSelection();
    });
  }

  /**
   * The server sends the heartbeats of the group this page shows only (the groups table has none): tell it
   * when that changes. One small request per change of selection, never periodic; a stream that is gone
   * answers 404 and the reconnect names the group in its URL.
   */
  function tellSelection() {
    if (state.streamId === null || state.selected === state.toldSelected) return;
    state.toldSelected = state.selected;
    const query = new URLSearchParams({ stream: state.streamId });
    if (state.selected !== null) query.set('group', state.selected);
    const token = sessionStorage.getItem(TOKEN_KEY);
    // One after another: two in flight may travel on separate connections and arrive swapped, leaving the
    // server on the group the page left.
    state.selectionSent = state.selectionSent
      .then(() =>
        fetch(`/api/stream/select?${query}`, {
          method: 'POST',
          headers: token === null ? {} : { authorization: `Bearer ${token}` },
          cache: 'no-store',
        }),
      )
      .catch(() => undefined);
  }

  function sortValue(group, key) {
    switch (key) {
      case 'members':
        return group.memberCount;
      case 'totalLag':
        return group.totalLag === null ? -1 : Number(group.totalLag);
      case 'lastRebalanceMs':
        return group.lastRebalanceMs ?? 0;
      case 'coordinatorId':
        return group.coordinatorId ?? -1;
      default:
        return group[key];
    }
  }

  // The groups table is windowed: only the rows in view (and ROW_OVERSCAN on each side) are in the DOM,
  // between two spacer rows that keep the scroll height of every row. With 1,000 groups a change then
  // costs the browser the paint, pre-paint and layout of a few dozen rows, not of 1,001. Filter and sort
  // still run over every group; rows have one fixed height (page.css), measured once.
  const ROW_OVERSCAN = 10;
  const viewport = { scrollTop: 0, heightPx: 600, rowHeightPx: 32, isRowHeightMeasured: false };

  /** groupId → its row in the window, the view it shows, its index and its "ago" cell. */
  const rowCache = new Map();
  let renderedOrder = [];
  /** The groups the table lists now, filtered and sorted (keyboard navigation walks it). */
  let listedOrder = [];

  function spacer() {
    const td = el('td', { colspan: '8' });
    return { tr: el('tr', { class: 'spacer', 'aria-hidden': 'true' }, td), td, heightPx: -1 };
  }
  const topSpacer = spacer();
  const bottomSpacer = spacer();

  function setSpacer(s, heightPx) {
    if (s.heightPx === heightPx) return;
    s.heightPx = heightPx;
    s.td.style.height = `${heightPx}px`;
  }

  function buildRow(group, index) {
    const isSelected = group.groupId === state.selected;
    const agoCell = el('td', { class: 'muted' }, ago(group.lastRebalanceMs));
    const tr = el(
      'tr',
      {
        'data-group': group.groupId,
        'aria-rowindex': String(index + 2),
        'aria-selected': isSelected ? 'true' : 'false',
        class: isSelected ? 'selected' : null,
      },
      el('td', { class: 'group-id', title: group.groupId }, group.groupId),
      el('td', { title: group.state }, stateBadge(group.state)),
      el('td', { class: 'num' }, group.generationId),
      el(
        'td',
        { title: group.protocol || group.protocolType || null },
        group.protocol || el('span', { class: 'muted' }, group.protocolType || '—'),
      ),
      el('td', { class: 'num' }, group.memberCount),
      el('td', { class: 'num' }, formatLag(group.totalLag)),
      agoCell,
      coordinatorCell(group.coordinatorId),
    );
    return { tr, group, isSelected, index, agoCell };
  }

  /**
   * The node that coordinates the group; `moving` while none is known (its `__consumer_offsets` partition
   * left its coordinator, or that node stopped answering, and no node has told of it since).
   */
  function coordinatorCell(coordinatorId) {
    return coordinatorId === null || coordinatorId === undefined
      ? el(
          'td',
          { class: 'num muted', 'data-testid': 'group-coordinator', title: 'coordinator not known yet' },
          'moving',
        )
      : el('td', { class: 'num', 'data-testid': 'group-coordinator' }, String(coordinatorId));
  }

  /** "12s ago" moves on without any change: once a second, only those cells (of the window) are rewritten. */
  function refreshAges() {
    for (const row of rowCache.values()) {
      const text = ago(row.group.lastRebalanceMs);
      if (row.agoCell.textContent !== text) row.agoCell.textContent = text;
    }
  }

  function listedGroups() {
    const filter = state.filter.toLowerCase();
    const rows = [];
    for (const group of groups.values()) {
      if (
        filter === '' ||
        group.groupId.toLowerCase().includes(filter) ||
        group.state.toLowerCase().includes(filter) ||
        group.protocol.toLowerCase().includes(filter)
      ) {
        rows.push(group);
      }
    }
    const { sortKey, sortDir } = state;
    rows.sort((a, b) => {
      const x = sortValue(a, sortKey);
      const y = sortValue(b, sortKey);
      if (x < y) return -sortDir;
      if (x > y) return sortDir;
      return a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0;
    });
    return rows;
  }

  function renderGroups() {
    const rows = listedGroups();
    listedOrder = rows.map((g) => g.groupId);
    const { rowHeightPx } = viewport;
    const first = Math.max(
      0,
      Math.min(rows.length, Math.floor(viewport.scrollTop / rowHeightPx) - ROW_OVERSCAN),
    );
    const last = Math.min(rows.length, first + Math.ceil(viewport.heightPx / rowHeightPx) + 2 * ROW_OVERSCAN);
    // Rows are built only for groups that changed since the last render or that scrolled into the window,
    // and the body is rebuilt only when the window's order changed: a change of one group costs one row.
    const order = listedOrder.slice(first, last);
    const inWindow = new Set(order);
    for (const [groupId, row] of rowCache) {
      if (inWindow.has(groupId)) continue;
      row.tr.remove();
      rowCache.delete(groupId);
    }
    for (let i = first; i < last; i++) {
      const group = rows[i];
      const cached = rowCache.get(group.groupId);
      if (
        cached !== undefined &&
        cached.group === group &&
        cached.isSelected === (group.groupId === state.selected)
      ) {
        if (cached.index !== i) {
          cached.index = i;
          cached.tr.setAttribute('aria-rowindex', String(i + 2));
        }
        continue;
      }
      const row = buildRow(group, i);
      if (cached !== undefined) cached.tr.replaceWith(row.tr);
      rowCache.set(group.groupId, row);
    }
    setSpacer(topSpacer, first * rowHeightPx);
    setSpacer(bottomSpacer, (rows.length - last) * rowHeightPx);
    const body = $('groups-body');
    if (order.length !== renderedOrder.length || order.some((id, i) => id !== renderedOrder[i])) {
      const fragment = document.createDocumentFragment();
      if (first > 0) fragment.append(topSpacer.tr);
      for (const groupId of order) fragment.append(rowCache.get(groupId).tr);
      if (last < rows.length) fragment.append(bottomSpacer.tr);
      body.replaceChildren(fragment);
      renderedOrder = order;
    } else {
      // Same rows: only the spacers may have come or gone (the list grew or shrank past the window).
      if (first > 0 !== topSpacer.tr.isConnected) {
        if (first > 0) body.prepend(topSpacer.tr);
        else topSpacer.tr.remove();
      }
      if (last < rows.length !== bottomSpacer.tr.isConnected) {
        if (last < rows.length) body.append(bottomSpacer.tr);
        else bottomSpacer.tr.remove();
      }
    }
    if (!viewport.isRowHeightMeasured && order.length > 0) measureRows();
    $('groups-table').setAttribute('aria-rowcount', String(rows.length + 1));
    $('group-count').textContent = String(groups.size);
    $('groups-empty').hidden = groups.size > 0;
    const { sortKey, sortDir } = state;
    for (const th of document.querySelectorAll('#groups-table th[data-sort]')) {
      if (th.dataset.sort === sortKey) th.setAttribute('aria-sort', sortDir > 0 ? 'ascending' : 'descending');
      else th.removeAttribute('aria-sort');
    }
  }

  /** Once, after the first rows are in: the rows' real height and the scroller's, for the window. */
  function measureRows() {
    const sample = rowCache.values().next().value.tr;
    const heightPx = sample.getBoundingClientRect().height;
    if (heightPx > 0) viewport.rowHeightPx = heightPx;
    viewport.isRowHeightMeasured = heightPx > 0;
    viewport.heightPx = $('groups-scroll').clientHeight || viewport.heightPx;
    // The window assumed a height: render again with the measured one.
    scheduleRender();
  }

  /** Keyboard: the arrows, Page Up/Down, Home and End move the selection through the listed groups. */
  function moveSelection(key) {
    if (listedOrder.length === 0) return false;
    const page = Math.max(1, Math.floor(viewport.heightPx / viewport.rowHeightPx) - 1);
    const at = listedOrder.indexOf(state.selected);
    const steps = { ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page };
    let next;
    if (key === 'Home') next = 0;
    else if (key === 'End') next = listedOrder.length - 1;
    else if (key in steps) next = at < 0 ? 0 : at + steps[key];
    else return false;
    next = Math.max(0, Math.min(listedOrder.length - 1, next));
    select(listedOrder[next]);
    // Bring the row into view: the scroll event renders the new window.
    const scroller = $('groups-scroll');
    const headPx = viewport.rowHeightPx;
    const topPx = next * viewport.rowHeightPx;
    if (topPx < scroller.scrollTop) scroller.scrollTop = topPx;
    else if (topPx + 2 * headPx > scroller.scrollTop + viewport.heightPx)
      scroller.scrollTop = topPx + 2 * headPx - viewport.heightPx;
    return true;
  }

  function select(groupId) {
    state.selected = groupId;
    history.replaceState(null, '', `#group=${encodeURIComponent(groupId)}`);
    state.detailDirty = true;
    scheduleRender();
  }

  function card(label, value, testId) {
    return el(
      'div',
      { class: 'card' },
      el('div', { class: 'label' }, label),
      el('div', { class: 'value', 'data-testid': testId }, value),
    );
  }

  function table(headers, rows, testId) {
    const head = el('tr', null, ...headers.map(([text, cls]) => el('th', { class: cls }, text)));
    return el(
      'table',
      { class: 'grid', 'data-testid': testId },
      el('thead', null, head),
      el('tbody', null, ...rows),
    );
  }

  /**
   * A cell for an id (member, instance, client, host, topic): the detail's tables have fixed columns, so a
   * long id is cut with an ellipsis (page.css) and carries the whole id in its title, shown on hover.
   */
  function idCell(text, cls) {
    if (!text) return el('td', { class: cls ? `id ${cls}` : 'id' }, '—');
    return el('td', { class: cls ? `id ${cls}` : 'id', title: text }, text);
  }

  /** A number cut like an id when its column is too narrow for it (an offset has up to 19 digits). */
  function numberCell(text, testId) {
    return el('td', { class: 'num id', title: text, 'data-testid': testId }, text);
  }

  /** The selected group's "last heartbeat" cells and their timestamps, for refreshHeartbeatAges. */
  let heartbeatCells = [];

  function heartbeatCell(lastHeartbeatMs) {
    const cell = el(
      'td',
      { class: 'muted', 'data-testid': 'member-heartbeat' },
      lastHeartbeatMs === null ? '—' : ago(lastHeartbeatMs),
    );
    if (lastHeartbeatMs !== null) heartbeatCells.push({ cell, ms: lastHeartbeatMs });
    return cell;
  }

  /**
   * A heartbeat's age grows between the server's frames: the page computes it from the timestamp and the
   * server's clock (the skew), once a second, rewriting only those cells.
   */
  function refreshHeartbeatAges() {
    for (const { cell, ms } of heartbeatCells) {
      const text = ago(ms);
      if (cell.textContent !== text) cell.textContent = text;
    }
  }

  function renderDetail() {
    heartbeatCells = [];
    const detail = $('detail');
    const group = shown !== null && shown.groupId === state.selected ? shown : undefined;
    if (group === undefined) {
      destroyChart();
      let text = 'This group is gone.';
      if (state.selected === null) text = 'Select a group.';
      else if (groups.has(state.selected)) text = 'Loading…';
      detail.replaceChildren(el('p', { class: 'empty' }, text));
      return;
    }
    const last = group.rebalances[group.rebalances.length - 1];
    const header = el(
      'div',
      { class: 'detail-head' },
      el('h2', { 'data-testid': 'group-title' }, group.groupId),
      stateBadge(group.state),
      el('span', { class: 'muted' }, `last change: ${group.reason}, ${ago(group.changedAtMs)}`),
    );
    const cards = el(
      'div',
      { class: 'cards' },
      card('State', group.state, 'group-state'),
      card('Generation', String(group.generationId), 'group-generation'),
      card('Members', String(group.members.length), 'group-members'),
      card('Total lag', formatLag(group.totalLag), 'group-lag'),
      card(
        'Coordinator',
        group.coordinatorId === null || group.coordinatorId === undefined
          ? 'moving'
          : `node ${group.coordinatorId}`,
        'group-coordinator-node',
      ),
      card(
        'Last rebalance',
        last === undefined ? '—' : ago(last.endMs ?? last.startMs),
        'group-last-rebalance',
      ),
    );

    const owned = new Map();
    for (const m of group.members) owned.set(m.memberId, m);
    const memberRows = group.members.map((m) =>
      el(
        'tr',
        { 'data-member': m.memberId },
        idCell(m.memberId),
        idCell(m.groupInstanceId),
        idCell(m.clientId),
        idCell(m.clientHost),
        el('td', { class: 'wrap', 'data-testid': 'member-assignment' }, assignmentText(m.assignment)),
        heartbeatCell(m.lastHeartbeatMs),
      ),
    );
    for (const d of [...group.departed].reverse()) {
      memberRows.push(
        el(
          'tr',
          { class: 'departed', 'data-departed': d.memberId },
          idCell(d.memberId),
          idCell(d.groupInstanceId),
          idCell(d.clientId),
          idCell(d.clientHost),
          el(
            'td',
            { class: 'how' },
            `${d.reason === 'session-expired' ? 'session expired' : d.reason === 'member-left' ? 'left' : d.reason} ${ago(d.atMs)}`,
          ),
          el('td', { class: 'muted' }, '—'),
        ),
      );
    }
    const members =
      group.members.length + group.departed.length === 0
        ? el('p', { class: 'empty' }, 'No members.')
        : table(
            [['Member id'], ['Instance id'], ['Client id'], ['Host'], ['Partitions'], ['Last heartbeat']],
            memberRows,
            'members-table',
          );

    const partitions =
      group.partitions.length === 0
        ? el('p', { class: 'empty' }, 'No partitions assigned or committed yet.')
        : table(
            [
              ['Topic'],
              ['Partition', 'num'],
              ['Committed', 'num'],
              ['High watermark', 'num'],
              ['Lag', 'num'],
              ['Owner'],
            ],
            group.partitions.map((p) => {
              const owner = p.memberId === null ? undefined : owned.get(p.memberId);
              return el(
                'tr',
                { 'data-partition': `${p.topic}/${p.partition}` },
                idCell(p.topic),
                el('td', { class: 'num' }, p.partition),
                numberCell(formatLag(p.committedOffset)),
                numberCell(formatLag(p.highWatermark)),
                numberCell(formatLag(p.lag), 'partition-lag'),
                idCell(owner === undefined ? '' : owner.groupInstanceId || owner.clientId, 'muted'),
              );
            }),
            'partitions-table',
          );

    const timeline =
      group.rebalances.length === 0
        ? el('p', { class: 'empty' }, 'No rebalance since the server started watching.')
        : el(
            'ol',
            { class: 'timeline', 'data-testid': 'timeline' },
            ...[...group.rebalances]
              .reverse()
              .map((r) =>
                el(
                  'li',
                  { 'data-generation': String(r.generationId) },
                  el('span', { class: 'muted' }, clock(r.startMs)),
                  el(
                    'span',
                    null,
                    ...r.reasons.map((reason) => el('span', { class: `reason ${reason}` }, reason)),
                  ),
                  el(
                    'span',
                    null,
                    `generation ${r.generationId} · `,
                    r.endMs === null ? 'in progress' : `${duration(r.endMs - r.startMs)} → ${r.endState}`,
                  ),
                ),
              ),
          );

    // The chart survives re-renders of its group: only its data changes.
    const chartBox =
      chart !== null && chartGroupId === group.groupId
        ? chart.root.parentElement
        : el('div', { class: 'chart', id: 'lag-chart' });
    // The samples charted (total lag, oldest first), for whoever reads the page without seeing the chart.
    chartBox.setAttribute('data-lag-samples', group.lagSamples.map(([, lag]) => lag).join(' '));
    detail.replaceChildren(
      header,
      cards,
      el('h3', null, 'Members'),
      members,
      el('h3', null, 'Partitions'),
      partitions,
      el('h3', null, 'Lag, last minutes'),
      chartBox,
      el('h3', null, 'Rebalances'),
      timeline,
    );
    if (chart !== null && chartGroupId === group.groupId) chart.setData(chartData(group));
    else drawChart(group, chartBox);
  }

  // ---- the cluster panel ------------------------------------------------------------------------

  /** Node ids as text, each marked when it is out of the ISR or not live. */
  function replicaList(ids, isr, live) {
    if (ids.length === 0) return el('span', { class: 'muted' }, '—');
    const parts = [];
    ids.forEach((id, i) => {
      if (i > 0) parts.push(', ');
      const marks = [];
      if (isr !== null && !isr.includes(id)) marks.push('out-of-sync');
      if (!live.has(id)) marks.push('down');
      parts.push(
        el(
          'span',
          {
            class: marks.length === 0 ? null : marks.join(' '),
            title: marks.length === 0 ? null : marks.map((m) => m.replace(/-/g, ' ')).join(', '),
          },
          String(id),
        ),
      );
    });
    return el('span', null, ...parts);
  }

  function renderCluster() {
    if (cluster === null) return;
    const view = cluster;
    const isSingle = view.mode === 'single-node';
    const live = new Set(view.nodes.filter((n) => n.isLive).map((n) => n.nodeId));
    $('cluster-mode').textContent = isSingle
      ? 'single node'
      : `${live.size} of ${view.nodes.length} nodes live, as node ${view.localNodeId} sees it`;
    const controller = isSingle
      ? 'none: one node'
      : view.controllerId < 0
        ? 'none'
        : `node ${view.controllerId}`;
    const cards = el(
      'div',
      { class: 'cards' },
      card('Nodes live', `${live.size} / ${view.nodes.length}`, 'cluster-nodes'),
      card('Controller', controller, 'cluster-controller'),
      card('Partitions', String(view.partitionCount), 'cluster-partitions'),
      card('Offline', String(view.offlineCount), 'cluster-offline'),
      card('Under-replicated', String(view.underReplicatedCount), 'cluster-under-replicated'),
    );
    if (view.offlineCount > 0) cards.children[3].classList.add('bad');
    if (view.underReplicatedCount > 0) cards.children[4].classList.add('warn');

    const nodes = table(
      [['Node', 'num'], ['Address'], ['Role'], ['Leads', 'num'], ['Status']],
      view.nodes.map((n) =>
        el(
          'tr',
          { 'data-node': String(n.nodeId), class: n.isLive ? null : 'down' },
          el('td', { class: 'num' }, n.nodeId),
          el('td', null, n.host === null ? '—' : `${n.host}:${n.port}`),
          el(
            'td',
            { 'data-testid': 'node-role' },
            n.isController ? el('span', { class: 'tag controller' }, 'controller') : null,
            n.isLocal ? el('span', { class: 'tag local' }, 'this node') : null,
          ),
          el('td', { class: 'num', 'data-testid': 'node-leads' }, n.leaderCount),
          el('td', { 'data-testid': 'node-status' }, n.isLive ? 'live' : 'not live'),
        ),
      ),
      'nodes-table',
    );

    const rows = [];
    for (const topic of view.topics) {
      for (const p of topic.partitions) {
        if (state.problemsOnly && !p.isOffline && !p.isUnderReplicated) continue;
        const status = p.isOffline ? 'offline' : p.isUnderReplicated ? 'under-replicated' : 'ok';
        rows.push(
          el(
            'tr',
            {
              'data-topic-partition': `${topic.name}/${p.partition}`,
              class: status === 'ok' ? null : status,
            },
            el('td', { class: 'topic', title: topic.name }, topic.name),
            el('td', { class: 'num' }, p.partition),
            el(
              'td',
              { class: 'num', 'data-testid': 'partition-leader' },
              p.isOffline ? 'none' : String(p.leaderId),
            ),
            el('td', { class: 'num', 'data-testid': 'partition-epoch' }, p.leaderEpoch),
            el('td', { 'data-testid': 'partition-replicas' }, replicaList(p.replicas, p.isr, live)),
            el('td', { 'data-testid': 'partition-isr' }, p.isr.join(', ') || '—'),
            el(
              'td',
              { 'data-testid': 'partition-status' },
              el('span', { class: `health ${status}` }, status),
            ),
          ),
        );
      }
    }
    const partitions =
      rows.length === 0
        ? el(
            'p',
            { class: 'empty' },
            view.partitionCount === 0 ? 'No topics yet.' : 'Every partition has a leader and its full ISR.',
          )
        : el(
            'div',
            { class: 'scroll cluster-partitions' },
            table(
              [
                ['Topic'],
                ['Partition', 'num'],
                ['Leader', 'num'],
                ['Epoch', 'num'],
                ['Replicas'],
                ['ISR'],
                ['Status'],
              ],
              rows,
              'cluster-partitions-table',
            ),
          );
    $('cluster-body').replaceChildren(
      cards,
      el(
        'div',
        { class: 'cluster-grid' },
        el('div', null, el('h3', null, 'Nodes'), nodes),
        el('div', null, el('h3', null, 'Partitions'), partitions),
      ),
    );
  }

  function destroyChart() {
    if (chart !== null) chart.destroy();
    chart = null;
    chartGroupId = null;
  }

  function chartData(group) {
    const xs = [];
    const ys = [];
    for (const [t, lag] of group.lagSamples) {
      xs.push(t / 1000);
      ys.push(lag);
    }
    // The lag holds until the next change: extend the last sample to now.
    if (ys.length > 0) {
      xs.push(Math.max(nowMs() / 1000, xs[xs.length - 1]));
      ys.push(ys[ys.length - 1]);
    }
    return [xs, ys];
  }

  function drawChart(group, box) {
    destroyChart();
    if (typeof uPlot !== 'function') return;
    const width = Math.max(320, box.clientWidth || box.parentElement.clientWidth - 32);
    chart = new uPlot(
      {
        width,
        height: 180,
        legend: { show: false },
        cursor: { show: false },
        scales: { x: { time: true } },
        axes: [{ stroke: '#667085' }, { stroke: '#667085', size: 60 }],
        series: [
          {},
          {
            label: 'lag',
            stroke: '#3559e0',
            fill: 'rgba(53,89,224,0.08)',
            width: 2,
            paths: uPlot.paths.stepped({ align: 1 }),
          },
        ],
      },
      chartData(group),
      box,
    );
    chartGroupId = group.groupId;
  }

  // ---- the stream -------------------------------------------------------------------------------

  function setStatus(text, kind) {
    const status = $('status');
    status.textContent = text;
    status.dataset.state = kind;
  }

  function banner(text) {
    const b = $('banner');
    b.textContent = text ?? '';
    b.hidden = text === null;
  }

  function onFrame(event, data) {
    switch (event) {
      case 'hello':
        state.skewMs = data.nowMs - Date.now();
        state.streamId = data.streamId;
        groups.clear();
        shown = null;
        setStatus('live', 'live');
        banner(null);
        state.detailDirty = true;
        break;
      case 'row':
        groups.set(data.groupId, data);
        if (state.selected === null) state.selected = data.groupId;
        if (data.groupId === state.selected) state.detailDirty = true;
        break;
      case 'group':
        // A late view of a group shown before is of no use: the one selected now follows.
        if (data.groupId !== state.selected) break;
        shown = data;
        state.detailDirty = true;
        break;
      case 'heartbeats':
        // Only the shown group's detail has heartbeats (the groups table has none).
        for (const change of data) {
          if (shown === null || change.groupId !== shown.groupId) continue;
          const latest = new Map(change.members);
          shown.members = shown.members.map((m) =>
            latest.has(m.memberId) ? { ...m, lastHeartbeatMs: latest.get(m.memberId) } : m,
          );
          state.detailDirty = true;
        }
        break;
      case 'cluster':
        cluster = data;
        state.clusterDirty = true;
        break;
      case 'gone':
        groups.delete(data.groupId);
        if (shown !== null && shown.groupId === data.groupId) shown = null;
        if (data.groupId === state.selected) state.detailDirty = true;
        break;
      case 'tick':
        state.skewMs = data.nowMs - Date.now();
        return scheduleTickRender();
      case 'dropped':
        banner(data.message);
        setStatus('dropped', 'error');
        break;
    }
    scheduleRender();
  }

  let lastTickRender = 0;
  function scheduleTickRender() {
    // "12s ago" moves on: refresh the relative times once a second at most.
    if (Date.now() - lastTickRender < 1000) return;
    lastTickRender = Date.now();
    refreshAges();
    state.detailDirty = true;
    scheduleRender();
  }

  async function connect() {
    const token = sessionStorage.getItem(TOKEN_KEY);
    setStatus('connecting…', 'connecting');
    let response;
    // The stream's URL names the group shown, so that its heartbeats come from the first frames on.
    state.streamId = null;
    state.toldSelected = state.selected;
    const query = state.selected === null ? '' : `?${new URLSearchParams({ group: state.selected })}`;
    try {
      response = await fetch(`/api/stream${query}`, {
        headers: token === null ? {} : { authorization: `Bearer ${token}` },
        cache: 'no-store',
      });
    } catch {
      setStatus('server unreachable', 'error');
      return setTimeout(connect, RECONNECT_MS);
    }
    if (response.status === 401) {
      if (token !== null) sessionStorage.removeItem(TOKEN_KEY);
      showTokenForm(token !== null);
      return;
    }
    if (!response.ok || response.body === null) {
      setStatus(`error ${response.status}`, 'error');
      return setTimeout(connect, RECONNECT_MS);
    }
    $('token-form').hidden = true;
    $('layout').hidden = false;
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let event = 'message';
          let data = '';
          for (const line of frame.split('\n')) {
            if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data += line.slice(6);
          }
          if (data !== '') onFrame(event, JSON.parse(data));
        }
      }
    } catch {
      // The connection broke: reconnect below.
    }
    if ($('status').dataset.state !== 'error') setStatus('reconnecting…', 'connecting');
    setTimeout(connect, RECONNECT_MS);
  }

  function showTokenForm(wasRefused) {
    setStatus(wasRefused ? 'token refused' : 'token needed', 'error');
    $('layout').hidden = true;
    $('token-form').hidden = false;
    $('token-input').focus();
  }

  // ---- interaction ------------------------------------------------------------------------------

  $('token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('token-input').value.trim());
    $('token-input').value = '';
    $('token-form').hidden = true;
    connect();
  });
  $('cluster-problems').addEventListener('change', (event) => {
    state.problemsOnly = event.target.checked;
    state.clusterDirty = true;
    scheduleRender();
  });
  $('filter').addEventListener('input', (event) => {
    state.filter = event.target.value;
    scheduleRender();
  });
  function sortBy(key) {
    if (state.sortKey === key) state.sortDir = -state.sortDir;
    else {
      state.sortKey = key;
      state.sortDir = key === 'totalLag' || key === 'lastRebalanceMs' ? -1 : 1;
    }
    scheduleRender();
  }
  const head = $('groups-table').querySelector('thead');
  for (const th of head.querySelectorAll('th[data-sort]')) th.tabIndex = 0;
  head.addEventListener('click', (event) => {
    const key = event.target.closest('th')?.dataset.sort;
    if (key !== undefined) sortBy(key);
  });
  head.addEventListener('keydown', (event) => {
    const key = event.target.closest('th')?.dataset.sort;
    if (key === undefined || (event.key !== 'Enter' && event.key !== ' ')) return;
    event.preventDefault();
    sortBy(key);
  });
  $('groups-body').addEventListener('click', (event) => {
    const row = event.target.closest('tr');
    if (row === null || row.dataset.group === undefined) return;
    select(row.dataset.group);
  });
  const scroller = $('groups-scroll');
  scroller.addEventListener(
    'scroll',
    () => {
      viewport.scrollTop = scroller.scrollTop;
      scheduleRender();
    },
    { passive: true },
  );
  scroller.addEventListener('keydown', (event) => {
    if (event.target.closest('thead') !== null) return;
    if (moveSelection(event.key)) event.preventDefault();
  });
  // A link or the address bar naming another group (#group=<id>) selects it without a reload.
  window.addEventListener('hashchange', () => {
    const named = decodeURIComponent(location.hash.replace(/^#group=/, ''));
    if (named === '' || named === state.selected) return;
    state.selected = named;
    state.detailDirty = true;
    scheduleRender();
  });
  window.addEventListener('resize', () => {
    viewport.heightPx = scroller.clientHeight || viewport.heightPx;
    destroyChart();
    state.detailDirty = true;
    scheduleRender();
  });

  window.setInterval(refreshHeartbeatAges, 1000);
  connect();
})();

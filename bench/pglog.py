# pglog.py: the PostgreSQL statement log reader of the benchmarks (bench/postgres.sh,
# bench/delayed_job.sh). The server writes every statement with its duration
# (log_min_duration_statement = 0) to a JSON log (log_destination jsonlog). This reads it from a
# byte offset: the SQL a role sent (with its parameters put back in, so psql and sql_exporter
# can run the very same text), the database time, and when each statement ran, to tell how old
# an exporter's values were when a scrape served them.
#
#   pglog.py capture LOG OFFSET USER OUTDIR   each distinct statement into OUTDIR/qNN.sql and
#                                             OUTDIR/keys.json; prints "distinct other all"
#   pglog.py dbtime LOG OFFSET USER            prints "statements ms"
#   pglog.py ages LOG OFFSET USER KEYS SCRAPES prints "median max fresh" (bench/postgres.sh)
#   pglog.py keys OUT FILE...                  the normalised text of each FILE into OUT
import json, re, sys, datetime, statistics

MSG = re.compile(r'^duration: ([0-9.]+) ms  (statement|execute [^:]*|parse [^:]*|bind [^:]*): (.*)$', re.S)
PARAM = re.compile(r"\$(\d+) = ('(?:[^']|'')*'|NULL)")
OTHER = re.compile(r'^\s*(SET|RESET|SHOW|BEGIN|START|COMMIT|ROLLBACK|DISCARD|DEALLOCATE)\b', re.I)

def norm(sql):
    return ' '.join(sql.split()).rstrip(';').rstrip()

def records(path, offset, user):
    with open(path, 'rb') as f:
        f.seek(offset)
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get('user') != user:
                continue
            m = MSG.match(r.get('message', ''))
            if not m:
                continue
            ts = datetime.datetime.strptime(r['timestamp'][:23], '%Y-%m-%d %H:%M:%S.%f')
            end = ts.replace(tzinfo=datetime.timezone.utc).timestamp()
            yield dict(ms=float(m.group(1)), phase=m.group(2).split()[0], sql=norm(m.group(3)),
                       detail=r.get('detail', ''), end=end, pid=r.get('pid'))

def executions(path, offset, user):
    # one per statement run: simple-protocol "statement" or extended-protocol "execute"
    return [r for r in records(path, offset, user) if r['phase'] in ('statement', 'execute')]

def substitute(sql, detail):
    params = {}
    if detail and detail.startswith('parameters:'):
        for m in PARAM.finditer(detail):
            params[int(m.group(1))] = m.group(2)
    return re.sub(r'\$(\d+)(?!\d)', lambda m: params.get(int(m.group(1)), m.group(0)), sql)

def capture(path, offset, user, outdir):
    seen, n_other, n_all = [], 0, 0
    for r in executions(path, offset, user):
        n_all += 1
        if OTHER.match(r['sql']):
            n_other += 1
            continue
        if r['sql'] in [s for s, _ in seen]:
            continue
        seen.append((r['sql'], substitute(r['sql'], r['detail'])))
    # (the text is written on one line, as the log has it with runs of spaces collapsed)
    for i, (_, text) in enumerate(seen):
        with open('%s/q%02d.sql' % (outdir, i + 1), 'w') as f:
            f.write(text.rstrip().rstrip(';') + ';\n')
    with open(outdir + '/keys.json', 'w') as f:
        json.dump([s for s, _ in seen], f)
    print(len(seen), n_other, n_all)

def dbtime(path, offset, user):
    calls, ms = 0, 0.0
    for r in records(path, offset, user):
        ms += r['ms']
        if r['phase'] in ('statement', 'execute'):
            calls += 1
    print(calls, '%.3f' % ms)

def ages(path, offset, user, keyfile, scrapefile):
    # For each scrape (start end, epoch seconds) and each of the statements: the newest run that
    # had ended by the time the scrape ended. age = scrape end - that run's start; a scrape is
    # "fresh" when every statement ran inside it. The log's times are whole milliseconds.
    tol = 0.002
    keys = json.load(open(keyfile))
    runs = {k: [] for k in keys}
    for r in executions(path, offset, user):
        if r['sql'] in runs:
            runs[r['sql']].append((r['end'] - r['ms'] / 1000.0, r['end']))
    out, fresh = [], 0
    for line in open(scrapefile):
        s, e = map(float, line.split()[:2])
        worst, inside = 0.0, True
        for k in keys:
            done = [st for st, en in runs[k] if en <= e + tol]
            if not done:
                worst, inside = float('nan'), False
                break
            st = max(done)
            worst = max(worst, e - st)
            if st < s - tol:
                inside = False
        out.append(worst)
        fresh += inside
    good = [a for a in out if a == a]
    if not good:
        print('nan nan %d' % fresh)
    else:
        print('%.4f %.4f %d' % (statistics.median(good), max(good), fresh))

def keys(out, files):
    with open(out, 'w') as f:
        json.dump([norm(open(p).read()) for p in files], f)

cmd = sys.argv[1]
if cmd == 'keys':
    keys(sys.argv[2], sys.argv[3:])
elif cmd == 'capture':
    capture(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
elif cmd == 'dbtime':
    dbtime(sys.argv[2], int(sys.argv[3]), sys.argv[4])
elif cmd == 'ages':
    ages(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6])

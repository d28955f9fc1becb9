#!/usr/bin/python3
"""Break the mixture-of-experts serving validation rows' errors down (docs/serving.md, "Validation").

Runs `clustersim run --format json` on every scenario of scenarios/validation-serving-moe/ (or DIR) and prints the mean
|error|, the mean signed error and the rows within 15 % by model, VM size, (model, VM, TP), precision and
(prompt, output) lengths; with --rows, every row. Usage:
  analysis/validation/moe_serving_breakdown.py BUILD/sim/cli/clustersim [DIR] [--rows] [--json OUT.json]
The predicted metric is the scenario's [reference] metric from /summary (`_per_gpu` metrics divided by the replicas'
GPUs), as `clustersim validate` computes it (its MoE table prints with --leave-one-out or --fit).
"""
import collections, glob, json, os, subprocess, sys, tomllib
from concurrent.futures import ThreadPoolExecutor

def run(binary, path):
    sc = tomllib.load(open(path, 'rb'))
    out = subprocess.run([binary, 'run', path, '--format', 'json'], capture_output=True, text=True, check=True)
    v = json.loads(out.stdout)['summary']['values']
    metric = sc['reference']['metric']
    s, w = sc['serving'], sc['workload']
    # A replica's GPUs: tensor x pipeline, or the expert-parallel group (data-parallel attention: tensor 1).
    per_replica = max(v['tensor_parallel'] * v['pipeline_parallel'], s.get('expert_parallel', 1))
    gpus = per_replica * v['replicas']
    predicted = v[metric[:-len('_per_gpu')]] / gpus if metric.endswith('_per_gpu') else v[metric]
    return dict(name=os.path.basename(path)[:-5], model=sc.get('description', '').split(',')[0], vm=s['vm_size'],
                tp=s.get('tensor', 1), precision=s['precision'], isl=w.get('prompt_tokens'), osl=w.get('output_tokens'),
                measured=sc['reference']['value'], predicted=predicted,
                error=predicted / sc['reference']['value'] - 1.0, prefill_share=v['prefill_token_share'],
                sequences=v['sequences_per_iteration_mean'])

def summary(rows):
    e = [abs(r['error']) for r in rows]
    return 'n=%3d mean |error| %5.1f %%  signed %+5.1f %%  within 15 %% %d' % (
        len(rows), 100 * sum(e) / len(e), 100 * sum(r['error'] for r in rows) / len(rows), sum(x <= 0.15 for x in e))

def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    if not args:
        sys.exit(__doc__)
    binary = args[0]
    directory = args[1] if len(args) > 1 else os.path.join(os.path.dirname(__file__), '../../scenarios/validation-serving-moe')
    files = sorted(glob.glob(os.path.join(directory, '*.toml')))
    with ThreadPoolExecutor(2) as pool:
        rows = list(pool.map(lambda f: run(binary, f), files))
    if '--json' in sys.argv:
        json.dump(rows, open(sys.argv[sys.argv.index('--json') + 1], 'w'), indent=0)
    print('all', summary(rows))
    keys = {'model': lambda r: r['model'], 'vm': lambda r: r['vm'],
            'model, vm, tp': lambda r: (r['model'], r['vm'], r['tp']), 'precision': lambda r: r['precision'],
            'prompt, output': lambda r: (r['isl'], r['osl'])}
    for label, key in keys.items():
        groups = collections.defaultdict(list)
        for r in rows:
            groups[str(key(r))].append(r)
        print('by', label)
        for k in sorted(groups):
            print('  %-58s %s' % (k, summary(groups[k])))
    if '--rows' in sys.argv:
        for r in rows:
            print('%-34s %-14s %-26s tp %d %5s/%-5s measured %9.1f predicted %9.1f %+6.1f %%  prefill share %.2f'
                  % (r['name'], r['model'], r['vm'], r['tp'], r['isl'], r['osl'], r['measured'], r['predicted'],
                     100 * r['error'], r['prefill_share']))

if __name__ == '__main__':
    main()

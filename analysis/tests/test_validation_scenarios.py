"""The validation scenarios are what analysis/validation/generate_scenarios.py writes from the published CSVs."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_generated_scenarios_match_the_published_tables():
    script = os.path.join(ROOT, "analysis", "validation", "generate_scenarios.py")
    result = subprocess.run([sys.executable, script, "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr

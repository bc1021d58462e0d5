"""What the browser tests of web/ share: a gpu-tenancy process on port 0, headless Chromium
through chromedriver, the browser's console errors, and a screenshot per test.

Each test file is a script run by ctest:
  /usr/bin/python3 test/web/picker_test.py --binary build/gpu-tenancy \
      --screenshots build/screenshots
"""

import argparse
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

ARGS = None  # the command line, read by main()


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument('--binary', required=True, help='the gpu-tenancy binary')
    parser.add_argument('--screenshots', required=True, help='where each test saves a PNG')
    parser.add_argument('--chromium', default='/usr/bin/chromium')
    parser.add_argument('--chromedriver', default='/usr/bin/chromedriver')
    args, rest = parser.parse_known_args()
    return args, rest


def main():
    """Runs the unittest cases of the calling script with its own command line."""
    global ARGS
    ARGS, rest = parse_args()
    os.makedirs(ARGS.screenshots, exist_ok=True)
    unittest.main(module='__main__', argv=[sys.argv[0]] + rest, verbosity=2)


class Process:
    """A gpu-tenancy subcommand, started on port 0 and stopped (SIGTERM, then SIGKILL) by stop().
    wait_for(pattern) reads its stdout until the pattern matches and returns the match."""

    def __init__(self, *args):
        # stderr goes to a file, not a pipe nobody reads: a chatty server must never block on it.
        self.log = tempfile.TemporaryFile(mode='w+')
        self.proc = subprocess.Popen([ARGS.binary, *args], stdout=subprocess.PIPE,
                                     stderr=self.log, bufsize=0)
        self.seen = ''

    def wait_for(self, pattern, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = re.search(pattern, self.seen)
            if match:
                return match
            if self.proc.poll() is not None:
                break
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:
                    break
                self.seen += chunk.decode(errors='replace')
        stderr = self.stop()
        raise AssertionError(f'{ARGS.binary} never printed /{pattern}/; stdout: {self.seen!r}; '
                             f'stderr: {stderr[-2000:]!r}')

    def stop(self):
        """Ends the process (if it still runs) and returns what it wrote to stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.log.seek(0)
        return self.log.read()


def start_ui(*args):
    """`gpu-tenancy ui` on a free port; returns (process, base URL ending in /ui/)."""
    process = Process('ui', '--listen', '127.0.0.1:0', *args)
    url = process.wait_for(r'ui: (http://127\.0\.0\.1:\d+/ui/)').group(1)
    return process, url


def start_serve_demo():
    """`gpu-tenancy serve --demo` with both listeners on free ports; returns (process, operator
    base URL such as http://127.0.0.1:PORT/). The ready line names both ports."""
    process = Process('serve', '--demo', '--listen', '127.0.0.1:0',
                      '--metrics-listen', '127.0.0.1:0')
    port = process.wait_for(r'ready tls_port=\d+ metrics_port=(\d+)\n').group(1)
    return process, f'http://127.0.0.1:{port}/'


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.load(reply)


def start_browser(width=1280, height=800):
    options = webdriver.ChromeOptions()
    options.binary_location = ARGS.chromium
    for flag in ('--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
                 f'--window-size={width},{height}', '--disable-extensions',
                 '--no-first-run', '--disable-background-networking'):
        options.add_argument(flag)
    options.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
    driver = webdriver.Chrome(service=Service(ARGS.chromedriver), options=options)
    # --window-size is the outer window: grow it by the frame so the page itself gets width x
    # height, as on a 1280x800 screen.
    frame_width, frame_height = driver.execute_script(
        'return [window.outerWidth - window.innerWidth, window.outerHeight - window.innerHeight]')
    driver.set_window_size(width + frame_width, height + frame_height)
    return driver


def console_errors(driver, allowed=()):
    """The browser log's SEVERE entries since the last call, minus those matching `allowed`."""
    return [entry['message'] for entry in driver.get_log('browser')
            if entry['level'] == 'SEVERE'
            and not any(re.search(a, entry['message']) for a in allowed)]


def screenshot(driver, name):
    path = os.path.join(ARGS.screenshots, f'{name}.png')
    driver.save_screenshot(path)
    return path


def wait_until(driver, condition, timeout=10, message=''):
    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(condition, message)


def find(root, selector):
    """The first element under `root` (the driver or an element) that matches a CSS selector."""
    return root.find_element(By.CSS_SELECTOR, selector)


def find_all(root, selector):
    return root.find_elements(By.CSS_SELECTOR, selector)


def horizontal_overflow(driver):
    """How many pixels the page is wider than the window (0 or less: it fits)."""
    return driver.execute_script('return document.documentElement.scrollWidth - window.innerWidth')

"""The live GPU map (web/map.html) in headless Chromium, against `gpu-tenancy serve` on a
cluster whose GPU several claims share (DRAConsumableCapacity): the shared device shows one chip
per claim holding a share, in its tenant's colour, with what the share consumes, and the tenant
filter keeps the node for either tenant. The cluster file is test/testdata/dra's
cluster-consumable-capacity.json (research and acme each hold a 10Gi share of node-c's gpu-0).
"""

import os
import subprocess
import tempfile
import unittest

import browser

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTER = os.path.join(HERE, '..', 'testdata', 'dra', 'cluster-consumable-capacity.json')
POLICY = """tiers:
  - name: untrusted
    modes: [exclusive, mig]
  - name: trusted
    modes: [exclusive, mig, timeslice]
tenants:
  - name: research
    tier: trusted
    namespaces: [research]
  - name: acme
    tier: untrusted
    namespaces: [acme]
unknownTenant: deny
"""


class SharedMapTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        policy = os.path.join(cls.dir.name, 'policy.yaml')
        with open(policy, 'w') as f:
            f.write(POLICY)
        cert, key = (os.path.join(cls.dir.name, n) for n in ('tls.crt', 'tls.key'))
        subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1',
                        '-subj', '/CN=localhost', '-keyout', key, '-out', cert],
                       check=True, capture_output=True)
        cls.serve = browser.Process('serve', '--cluster-file', CLUSTER, '--policy', policy,
                                    '--tls-cert', cert, '--tls-key', key,
                                    '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0')
        port = cls.serve.wait_for(r'ready tls_port=\d+ metrics_port=(\d+)\n').group(1)
        cls.url = f'http://127.0.0.1:{port}/'
        try:
            cls.driver = browser.start_browser()
        except Exception:
            cls.serve.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.serve.stop()
        cls.dir.cleanup()

    def test_a_shared_gpu_shows_each_share(self):
        self.driver.get(self.url + 'ui/map.html')
        browser.wait_until(self.driver, lambda d: d.find_elements(By.CSS_SELECTOR, 'article.node'),
                           message='the map never drew a node')
        row = self.driver.find_element(By.CSS_SELECTOR,
                                       'tr[data-device="gpu.nvidia.com/node-c/gpu-0"]')
        chips = row.find_elements(By.CSS_SELECTOR, '[data-share]')
        self.assertEqual([(c.text, c.get_attribute('data-share')) for c in chips],
                         [('acme: memory 10Gi', 'acme/shared-b'),
                          ('research: memory 10Gi', 'research/shared-a')])
        # Each tenant in its own colour.
        self.assertNotEqual(chips[0].get_attribute('class'), chips[1].get_attribute('class'))
        self.assertIn('shared, memory 20Gi of 81559Mi used', row.text)
        plain = self.driver.find_element(By.CSS_SELECTOR,
                                         'tr[data-device="gpu.nvidia.com/node-c/gpu-1"]')
        self.assertIn('free', plain.text)
        browser.screenshot(self.driver, 'map-shared-gpu')
        for tenant in ('acme', 'research'):
            Select(self.driver.find_element(By.ID, 'tenant-filter')).select_by_value(tenant)
            shown = [n.get_attribute('data-node')
                     for n in browser.find_all(self.driver, 'article.node')]
            self.assertEqual(shown, ['node-c'], tenant)
        self.assertEqual(browser.console_errors(self.driver), [])


if __name__ == '__main__':
    browser.main()

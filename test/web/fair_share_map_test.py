"""The live GPU map (web/map.html) in headless Chromium, against `gpu-tenancy serve` on the
fair-sharing scenario (test/testdata/fair_share): the pods tenants hold beyond their guarantee
(vision's train-3, batch's sweep-1) are marked borrowed and the others are not, and the fair-share
table says what each tenant is guaranteed, holds, borrows and lends, as /debug/allocations does.
"""

import os
import subprocess
import tempfile
import unittest

import browser

from selenium.webdriver.common.by import By

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, '..', 'testdata', 'fair_share')


class FairShareMapTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cert, key = (os.path.join(cls.dir.name, n) for n in ('tls.crt', 'tls.key'))
        subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1',
                        '-subj', '/CN=localhost', '-keyout', key, '-out', cert],
                       check=True, capture_output=True)
        cls.serve = browser.Process('serve', '--cluster-file', os.path.join(DATA, 'cluster.json'),
                                    '--policy', os.path.join(DATA, 'policy.yaml'),
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

    def test_borrowed_pods_are_marked_and_the_table_says_who_lends(self):
        self.driver.get(self.url + 'ui/map.html')
        browser.wait_until(self.driver,
                           lambda d: d.find_elements(By.CSS_SELECTOR, '#fair-share tbody tr'),
                           message='the map never drew the fair-share table')
        borrowed = {}
        for slot in self.driver.find_elements(By.CSS_SELECTOR, '.slot[data-pod]'):
            borrowed.setdefault(slot.get_attribute('data-pod'), set()).add(
                slot.get_attribute('data-borrowed'))
        self.assertEqual(borrowed, {
            'vision/train-1': {'false'}, 'vision/train-2': {'false'},
            'vision/train-3': {'true'}, 'batch/sweep-1': {'true'}})
        for slot in self.driver.find_elements(By.CSS_SELECTOR, '.slot.borrowed'):
            self.assertIn('borrowed', slot.text)

        rows = {}
        for row in self.driver.find_elements(By.CSS_SELECTOR, '#fair-share tbody tr'):
            cells = [c.text for c in row.find_elements(By.CSS_SELECTOR, 'td')]
            rows[row.get_attribute('data-tenant')] = cells
        # Tenant, group, weight, resource, guaranteed, limit, holds, borrows, lends, fair share.
        self.assertEqual(rows['vision'],
                         ['vision', 'research', '1', 'nvidia.com/gpu', '4', '8', '6', '2', '0', '6'])
        self.assertEqual(rows['speech'],
                         ['speech', 'research', '1', 'nvidia.com/gpu', '4', '8', '0', '0', '4', '2'])
        self.assertEqual(rows['batch'],
                         ['batch', '–', '2', 'nvidia.com/gpu', '0', '8', '2', '2', '0', '0'])
        allocations = browser.get_json(self.url + 'debug/allocations')
        for tenant in allocations['tenants']:
            item = tenant['fairShare']['items'][0]
            self.assertEqual(rows[tenant['tenant']][7], str(item['borrowed']))
        browser.screenshot(self.driver, 'fair-share-map')
        self.assertEqual(browser.console_errors(self.driver), [])


if __name__ == '__main__':
    browser.main()

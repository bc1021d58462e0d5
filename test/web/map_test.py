"""The live GPU map (web/map.html) in headless Chromium, against `gpu-tenancy serve --demo`.

Every pod /debug/allocations lists must be drawn on its node, in the slots of the resource it
holds, once per device, in its tenant's colour; mig-c (mig-manager pending) must say it is
reconfiguring; the tenant and pool filters must narrow the nodes.
"""

import browser
import unittest

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select


class MapTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.serve, cls.url = browser.start_serve_demo()
        try:
            cls.driver = browser.start_browser()
        except Exception:
            cls.serve.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.serve.stop()

    def open_map(self):
        self.driver.get(self.url + 'ui/map.html')
        browser.wait_until(self.driver, lambda d: d.find_elements(By.CSS_SELECTOR, 'article.node'),
                           message='the map never drew a node')

    def shown_nodes(self):
        return [n.get_attribute('data-node') for n in browser.find_all(self.driver, 'article.node')]

    def test_each_tenant_holds_its_slices_on_the_right_nodes(self):
        self.open_map()
        allocations = browser.get_json(self.url + 'debug/allocations')
        expected = []  # (node, resource, tenant, namespace/pod, devices)
        for tenant in allocations['tenants']:
            for node in tenant['nodes']:
                for pod in node['pods']:
                    for resource, count in pod['devices'].items():
                        expected.append((node['node'], resource, tenant['tenant'],
                                         f"{pod['namespace']}/{pod['name']}", count))
        # The demo holds acme, bank and research pods on four nodes; if that ever changes, this
        # test should be looked at rather than pass on less.
        self.assertEqual({e[2] for e in expected}, {'acme', 'bank', 'research'})
        self.assertEqual({e[0] for e in expected}, {'mig-a', 'mig-b', 'ts-a', 'excl-a'})

        drawn = []
        for slot in self.driver.find_elements(By.CSS_SELECTOR, '.slot[data-pod]'):
            node = slot.find_element(By.XPATH, 'ancestor::article[@data-node]')
            resource = slot.find_element(By.XPATH, 'ancestor::div[@data-resource]')
            drawn.append((node.get_attribute('data-node'), resource.get_attribute('data-resource'),
                          slot.get_attribute('data-tenant'), slot.get_attribute('data-pod')))
        self.assertEqual(sorted(drawn), sorted(
            (node, resource, tenant, pod) for node, resource, tenant, pod, count in expected
            for _ in range(count)))

        # What a person reads: bank's risk-model and acme's llm-a take both 3g.40gb of mig-b.
        mig_b = self.driver.find_element(By.CSS_SELECTOR, 'article[data-node=mig-b]')
        big = mig_b.find_element(By.CSS_SELECTOR, '[data-resource="nvidia.com/mig-3g.40gb"]')
        self.assertIn('2 of 2 used', big.text)
        slots = [s.text.replace('\n', ' ') for s in big.find_elements(By.CLASS_NAME, 'slot')]
        # Each with the MIG instance the node agent reported, shortened; the full UUID on hover.
        self.assertEqual(sorted(slots),
                         ['acme llm-a MIG-9c070001…', 'bank risk-model MIG-9c070002…'])
        # The time-sliced notebooks sit on the GPUs their annotations name.
        for pod, gpu in (('notebook-1', '0'), ('notebook-2', '1')):
            group = self.driver.find_element(
                By.CSS_SELECTOR, f'article[data-node=ts-a] .slot[data-pod="research/{pod}"]'
            ).find_element(By.XPATH, 'ancestor::div[@data-gpu]')
            self.assertEqual(group.get_attribute('data-gpu'), gpu)
        mig_c = self.driver.find_element(By.CSS_SELECTOR, 'article[data-node=mig-c]')
        self.assertRegex(mig_c.text, r'MIG reconfiguring \(.*pending\)')
        mig_1g = self.driver.find_element(By.CSS_SELECTOR, 'article[data-node=mig-1g]')
        self.assertIn('Free: 7 x 1g.10gb', mig_1g.text)
        self.assertEqual(len(mig_1g.find_elements(By.CSS_SELECTOR, '.slot.free-slot')), 7)
        self.assertNotIn('cpu-a', self.shown_nodes())
        browser.screenshot(self.driver, 'map-demo')
        # Readable on a narrow window: one column of nodes, nothing wider than the window.
        self.driver.set_window_size(480, 900)
        self.assertLessEqual(browser.horizontal_overflow(self.driver), 0)
        browser.screenshot(self.driver, 'map-narrow')
        self.driver.set_window_size(1280, 800)
        self.assertEqual(browser.console_errors(self.driver), [])

    def test_each_pod_shows_its_device_ids_and_each_gpu_its_tenants(self):
        self.open_map()
        llm_a = self.driver.find_element(
            By.CSS_SELECTOR, 'article[data-node=mig-b] .slot[data-pod="acme/llm-a"]')
        device = llm_a.find_element(By.CSS_SELECTOR, 'code.device-id')
        full = 'MIG-9c070001-31d2-5e4f-8a6b-2f1d7e3c0001'
        self.assertTrue(device.is_displayed())
        self.assertEqual(device.text, 'MIG-9c070001…')
        self.assertEqual(device.get_attribute('title'), full)
        self.assertIn(full, llm_a.get_attribute('title'))
        # A replica's ID keeps its replica number, and its title names the physical GPU.
        notebook = self.driver.find_element(
            By.CSS_SELECTOR, 'article[data-node=ts-a] .slot[data-pod="research/notebook-1"] code')
        self.assertEqual(notebook.text, 'GPU-5a1f0020…::2')
        self.assertEqual(notebook.get_attribute('title'),
                         'GPU-5a1f0020-7c3e-4b8a-9d21-0e6c4f2a0020::2 on '
                         'GPU-5a1f0020-7c3e-4b8a-9d21-0e6c4f2a0020')
        # trainer's three GPUs, one per slot.
        trainer = self.driver.find_elements(
            By.CSS_SELECTOR, 'article[data-node=excl-a] .slot[data-pod="research/trainer"] code')
        self.assertEqual(len({c.get_attribute('data-device-id') for c in trainer}), 3)
        # Per physical GPU the tenants on it; mig-b's IDs name no GPU, so it lists none.
        ts_a = self.driver.find_element(By.CSS_SELECTOR, 'article[data-node=ts-a]')
        gpu = ts_a.find_element(By.CSS_SELECTOR, '.physical-gpus li[data-gpu-id='
                                '"GPU-5a1f0020-7c3e-4b8a-9d21-0e6c4f2a0020"]')
        self.assertEqual(gpu.text.replace('\n', ' '), 'GPU-5a1f0020… shared: research')
        mig_a = self.driver.find_element(By.CSS_SELECTOR, 'article[data-node=mig-a]')
        self.assertIn('GPU-5a1f0010… mig: acme',
                      mig_a.find_element(By.CLASS_NAME, 'physical-gpus').text.replace('\n', ' '))
        self.assertEqual(self.driver.find_elements(
            By.CSS_SELECTOR, 'article[data-node=mig-b] .physical-gpus'), [])
        # The longer slots still fit their nodes.
        self.assertLessEqual(browser.horizontal_overflow(self.driver), 0)
        browser.screenshot(self.driver, 'map-device-ids')
        self.assertEqual(browser.console_errors(self.driver), [])

    def test_filters_narrow_the_nodes_and_stay_in_the_address(self):
        self.open_map()
        Select(self.driver.find_element(By.ID, 'tenant-filter')).select_by_value('bank')
        self.assertEqual(self.shown_nodes(), ['mig-b'])
        dimmed = self.driver.find_elements(By.CSS_SELECTOR, 'article[data-node=mig-b] .slot.dimmed')
        self.assertEqual(sorted(s.get_attribute('data-tenant') for s in dimmed), ['acme', 'acme'])
        self.assertIn('#tenant=bank', self.driver.current_url)
        Select(self.driver.find_element(By.ID, 'tenant-filter')).select_by_value('')
        Select(self.driver.find_element(By.ID, 'pool-filter')).select_by_value('gpu-timeslice')
        self.assertEqual(self.shown_nodes(), ['ts-a'])
        # The link keeps the filter, and a refresh keeps it too.
        self.driver.get(self.url + 'ui/map.html#pool=gpu-mig')
        mig_nodes = ['mig-1g', 'mig-a', 'mig-b', 'mig-c']
        browser.wait_until(self.driver, lambda d: self.shown_nodes() == mig_nodes,
                           message=f'a #pool=gpu-mig link shows {self.shown_nodes()}')
        def loads(d):
            return d.find_element(By.TAG_NAME, 'body').get_attribute('data-loads')
        before = loads(self.driver)
        self.driver.find_element(By.ID, 'refresh').click()
        browser.wait_until(self.driver, lambda d: loads(d) != before, message='no refresh')
        self.assertEqual(self.shown_nodes(), mig_nodes)
        self.assertEqual(browser.console_errors(self.driver), [])


if __name__ == '__main__':
    browser.main()
